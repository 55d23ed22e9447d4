"""``define_state`` and ``current_session()`` work in every callback the framework invokes,
and the context pass (the step_context hook) runs before every model call: each step's first
attempt, a retried attempt, and a forced completion call."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import helix_stream as hs
from tests.executor._util import assert_prefix_stable
from tests.loopback import LoopbackServer, error, text, tool_calls

counter = hs.define_state("test.scope.counter", lambda: 0)


class Q(BaseModel):
    q: str


class Answer(BaseModel):
    answer: str


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="scoped",
        system="System.",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "k"},
        **{"max_retries": 0, **kw},
    )


async def test_state_and_session_work_in_every_framework_callback(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: dict[str, list[Any]] = {}

    def note(where: str) -> None:
        value = counter.update(lambda n: n + 1)
        seen.setdefault(where, []).append((hs.current_session().id, value))

    def step_context(req: hs.StepContextRequest) -> None:
        note("step_context")

    async def memory(session_id: str, last_user: str) -> list[Any]:
        note("memory")
        return []

    def describe(context: Any) -> str:
        note("description")
        return "Look something up."

    def prepare_step(step: Any) -> None:
        note("prepare_step")

    def stop_when(steps: Any) -> bool:
        note("stop_when")
        return False

    def tool_body(input: Q) -> str:
        note("tool")
        return "ok"

    def callback(name: str) -> Any:
        return lambda *args: note(name)

    lookup = hs.tool(name="lookup", description=describe, input_schema=Q, execute=tool_body)
    a = agent(
        loopback,
        tools=[lookup],
        step_context=step_context,
        memory=memory,
        prepare_step=prepare_step,
        stop_when=stop_when,
        on_chunk=callback("on_chunk"),
        on_step_finish=callback("on_step_finish"),
        on_finish=callback("on_finish"),
    )
    loopback.script(tool_calls(("lookup", {"q": "x"})), text("done"))
    result = executor.run(a, "s", "go")
    await result.consume()
    assert result.error is None
    expected = {
        "step_context",
        "memory",
        "description",
        "prepare_step",
        "stop_when",
        "tool",
        "on_chunk",
        "on_step_finish",
        "on_finish",
    }
    assert set(seen) == expected
    assert {sid for entries in seen.values() for sid, _ in entries} == {"s"}
    # One state: every callback's update counted on the same per-session slot.
    values = sorted(value for entries in seen.values() for _, value in entries)
    assert values == list(range(1, len(values) + 1))


async def test_on_error_runs_in_the_session_too(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[str] = []
    loopback.script(error(400, "bad request"))
    a = agent(loopback, on_error=lambda exc: seen.append(hs.current_session().id))
    await executor.run(a, "s", "go").consume()
    assert seen == ["s"]


async def test_step_context_runs_before_a_retried_attempt(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    calls: list[tuple[int, Any]] = []

    def step_context(req: hs.StepContextRequest) -> dict[str, Any]:
        calls.append((req.step_number, req.cursor))
        n = (req.cursor or 0) + 1
        return {"items": [hs.notice(f"feed {n}")], "cursor": n}

    # The first attempt fails before its first chunk; Retry-After 0: no wait.
    loopback.script(error(500, "overloaded", headers={"retry-after": "0"}), text("ok"))
    a = agent(loopback, step_context=step_context, max_retries=1)
    result = executor.run(a, "s", "go")
    chunks = [c async for c in result]
    assert result.error is None
    assert len(loopback.requests) == 2
    assert calls == [(0, None), (0, 1)]  # before each model call, from the cursor it left
    rows = [(r.content, r.cursor) for r in await executor.context_rows("s")]
    assert rows == [("feed 1", 1), ("feed 2", 2)]
    first, second = loopback.bodies()
    assert "feed 2" not in str(first["messages"]) and "feed 2" in str(second["messages"][-1])
    assert_prefix_stable(loopback.requests)  # the retried request extends the first
    row_chunks = [c for c in chunks if isinstance(c, hs.chunks.ContextRowChunk)]
    assert [c.row.content for c in row_chunks] == ["feed 1", "feed 2"]
    # The next turn's request carries both rows where they were committed.
    loopback.script(text("again"))
    await executor.run(a, "s", "more").consume()
    assert_prefix_stable(loopback.requests[1:])


async def test_step_context_runs_before_a_forced_completion_call(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    steps: list[int] = []

    def step_context(req: hs.StepContextRequest) -> None:
        steps.append(req.step_number)

    a = agent(loopback, step_context=step_context, output_schema=Answer, max_steps=1)
    loopback.script(
        tool_calls(("lookup", {"q": "x"})),  # an unknown tool: max_steps reached, no finish
        tool_calls(("__finish__", {"answer": "42"})),
    )
    result = executor.run(a, "s", "go")
    await result.consume()
    assert result.error is None and result.output == Answer(answer="42")
    assert len(loopback.requests) == 2 and steps == [0, 1]
