"""Crash recovery: a process dies mid-stream; another resumes the session (SQLiteStore)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import helix_stream as hs
from tests.loopback import LoopbackServer, text

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import asyncio, sys
    import helix_stream as hs
    from helix_stream import chunks as c
    from tests._store import create_session

    def step_context(req):
        n = (req.cursor or 0) + 1
        return {"items": [hs.notice(f"feed item {n}")], "cursor": n}

    async def main(path, api_base):
        executor = hs.Executor(store=hs.SQLiteStore(path))
        await create_session(executor.store, "crash", agent_name="crashy")
        await executor.add_context("crash", [hs.instruction("Queued before the crash.")])
        agent = hs.Agent(name="crashy", model="openai/loopback", step_context=step_context,
                         settings={"api_base": api_base, "api_key": "k"})
        async for chunk in executor.run(agent, "crash", "go"):
            if isinstance(chunk, c.TextDelta):
                print("STREAMING", flush=True)   # the rows are committed; the model is mid-stream

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


async def test_a_step_lost_mid_stream_keeps_its_rows_and_resume_continues(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    path = str(tmp_path / "crash.db")
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    loopback.script(text("partial answer that never ends", pieces=4, hang=True))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    child = subprocess.Popen(
        [sys.executable, str(script), path, loopback.api_base],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "STREAMING"
        child.send_signal(signal.SIGKILL)  # the process dies during the model call
    finally:
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL

    cursors: list[Any] = []

    def step_context(req: hs.StepContextRequest) -> Any:
        cursors.append(req.cursor)
        n = (req.cursor or 0) + 1
        return {"items": [hs.notice(f"feed item {n}")], "cursor": n}

    executor = hs.Executor(store=hs.SQLiteStore(path))
    assert (await executor.session("crash")).status == "running"  # left by the dead process
    rows = [(r.content, r.cursor) for r in await executor.context_rows("crash")]
    assert rows == [("Queued before the crash.", None), ("feed item 1", 1)]
    await executor.resume("crash")
    agent = hs.Agent(
        name="crashy",
        model="openai/loopback",
        step_context=step_context,
        settings={"api_base": loopback.api_base, "api_key": "k"},
    )
    loopback.script(text("recovered"))
    assert await executor.run(agent, "crash", None).text() == "recovered"
    assert cursors == [1]  # the recovering step's hook starts from the kept rows' cursor
    rows = [(r.content, r.cursor) for r in await executor.context_rows("crash")]
    assert rows == [("Queued before the crash.", None), ("feed item 1", 1), ("feed item 2", 2)]
    messages = loopback.bodies()[-1]["messages"]
    assert [m["role"] for m in messages] == ["user", "system", "system", "system"]
    assert (await executor.session("crash")).status == "idle"
    await executor.store.close()
