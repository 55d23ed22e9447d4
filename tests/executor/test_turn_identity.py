"""A turn keeps one id and one sequence for its whole life, and its hooks' items are recorded
once however often it runs: paused and resumed, failed and retried, crashed and recovered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import helix_stream as hs
from helix_stream.hooks import Hook
from tests.loopback import LoopbackServer, error, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]


class Q(BaseModel):
    q: str


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="turns",
        system="System.",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
        **kw,
    )


def recording_hook(seen: list[Any], recorded: list[int]) -> Hook:
    async def started(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        seen.append((ctx.session.turn.id, ctx.session.turn.sequence, event.data["turn"]))
        recorded.append(await ctx.add_context([hs.instruction("Be brief.")]))

    return hs.define_hook(events={"turn.started": started})


async def test_a_paused_turn_keeps_its_id_and_sequence_when_it_resumes(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[Any] = []
    deploy = hs.tool(
        name="deploy", input_schema=Q, execute=lambda i: "deployed", needs_approval=True
    )

    def who(input: Q) -> Any:
        turn = hs.current_session().turn
        return [turn.id, turn.sequence]

    tools = [deploy, hs.tool(name="who", input_schema=Q, execute=who)]
    a = agent(loopback, tools=tools, hooks=[recording_hook(seen, [])])
    loopback.script(tool_calls(("deploy", {"q": "x"})))
    await executor.run(a, "s", "deploy it").consume()
    await executor.respond_to_approval("s", "approval-call_0_deploy", approved=True)
    loopback.script(tool_calls(("who", {"q": "x"})), text("done"))
    steps = await executor.run(a, "s").steps()
    loopback.script(text("next"))
    await executor.run(a, "s", "and now?").consume()
    [(first_id, *_), *_] = seen
    # The resumed run carries the turn on (turn.started brackets a turn once); its tools see
    # the same id and sequence.
    assert [(s, d) for _, s, d in seen] == [(1, 1), (2, 2)]
    assert first_id != seen[1][0]
    assert steps[0].tool_results[0].output == [first_id, 1]


async def test_a_retried_turn_keeps_its_sequence_and_its_hooks_items_are_recorded_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[Any] = []
    recorded: list[int] = []
    a = agent(loopback, hooks=[recording_hook(seen, recorded)])
    loopback.script(text("a first turn"))
    await executor.run(a, "s", "one").consume()
    loopback.script(error(500, "down"))
    failed = executor.run(a, "s", "two")
    await failed.consume()
    assert failed.error is not None and (await executor.session("s")).status == "failed"
    await executor.retry("s")  # the turn failed on its first step: retried from its start
    loopback.script(text("fine"))
    assert await executor.run(a, "s").text() == "fine"
    assert [(s, d) for _, s, d in seen] == [(1, 1), (2, 2), (2, 2)]
    assert seen[1][0] == seen[2][0]  # the same turn id
    assert recorded == [1, 1, 0]  # the re-run's handler records nothing twice
    rows = [r.content for r in await executor.context_rows("s")]
    assert rows == ["Be brief.", "Be brief."]  # one per turn
    last = loopback.requests[-1].decode()
    assert last.count("Be brief.") == 2  # sent once for each turn, not twice for the retried one


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    import helix_stream as hs
    from helix_stream import chunks as c

    async def started(event, ctx):
        print("TURN", ctx.session.turn.id, ctx.session.turn.sequence, flush=True)
        await ctx.add_context([hs.instruction("Be brief.")])

    async def main(path, api_base):
        executor = hs.Executor(store=hs.SQLiteStore(path))
        agent = hs.Agent(name="crashy", model="openai/loopback", max_retries=0,
                         hooks=[hs.define_hook(events={"turn.started": started})],
                         settings={"api_base": api_base, "api_key": "k"})
        await executor.run(agent, "crash", "one").consume()
        async for chunk in executor.run(agent, "crash", "two"):
            if isinstance(chunk, c.TextDelta):
                print("STREAMING", flush=True)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


async def test_a_recovered_crashed_turn_keeps_its_id_and_sequence(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    path = str(tmp_path / "crash.db")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    loopback.script(text("one done"), text("an answer that never ends", pieces=4, hang=True))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    child = subprocess.Popen(
        [sys.executable, str(script), path, loopback.api_base],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert child.stdout is not None
        lines = [child.stdout.readline().strip() for _ in range(3)]
        child.send_signal(signal.SIGKILL)  # dies during turn 2's model call
    finally:
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert lines[0].split()[2] == "1" and lines[2] == "STREAMING"
    _, crashed_id, crashed_sequence = lines[1].split()
    assert crashed_sequence == "2"

    seen: list[Any] = []
    recorded: list[int] = []
    executor = hs.Executor(store=hs.SQLiteStore(path))
    await executor.resume("crash")
    loopback.script(text("recovered"))
    a = hs.Agent(
        name="crashy",
        model="openai/loopback",
        max_retries=0,
        hooks=[recording_hook(seen, recorded)],
        settings={"api_base": loopback.api_base, "api_key": "k"},
    )
    assert await executor.run(a, "crash").text() == "recovered"
    assert [(i, s) for i, s, _ in seen] == [(crashed_id, 2)]
    assert recorded == [0]  # the crashed run's handler had recorded it
    rows = [r.content for r in await executor.context_rows("crash")]
    assert rows == ["Be brief.", "Be brief."]  # turn 1's and turn 2's
    await executor.store.close()
