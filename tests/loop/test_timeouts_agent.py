"""``timeout=`` on an ``Agent`` and ``Executor.run`` (a run's limits over the agent's): what
the user saw of a timed-out step is stored ``interrupted``, the session ends idle, and the next
turn works."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.errors import ModelTimeoutError
from tests.loopback import LoopbackServer, Reply, text, tool_calls

SLACK = 0.5


pytestmark = pytest.mark.usefixtures("warm_loopback")  # litellm's set-up is not a stall


def loopback_agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    """An agent on the loopback server (``kw``: the Agent's options)."""
    settings = {"api_base": loopback.api_base, "api_key": "sk-loopback"}
    return hs.Agent(name="a", model="openai/loopback", settings=settings, **kw)


async def _turn(executor: hs.Executor, agent: hs.Agent, text_in: str, **kw: Any) -> list[Any]:
    return [x async for x in executor.run(agent, "s1", text_in, **kw)]


async def test_a_stall_is_stored_interrupted_and_the_next_turn_works(
    loopback: LoopbackServer,
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    # stream_retries=0: the stall after text ends the step (recovery: test_stream_retries.py).
    agent = loopback_agent(loopback, timeout=hs.Timeout(chunk=0.5), stream_retries=0)
    stall = Reply(deltas=[{"content": w} for w in ("Once ", "upon ", "a ", "time")], stall_after=3)
    loopback.script(stall, text("Hello again"))
    started = time.monotonic()
    seen = await _turn(executor, agent, "tell me")
    took = time.monotonic() - started
    errors = [x.error for x in seen if isinstance(x, c.ErrorChunk)]
    assert len(errors) == 1 and isinstance(errors[0], ModelTimeoutError)
    assert errors[0].limit == "chunk" and abs(took - 0.5) < SLACK
    messages = await executor.ui_messages("s1")
    assistant = messages[-1]
    assert assistant["role"] == "assistant" and assistant["metadata"] == {
        "interrupted": True,
        "error": "model_timeout",
    }
    assert [p.get("text") for p in assistant["parts"] if p["type"] == "text"] == ["Once upon a "]
    # Idle and usable: the next turn runs, and the model sees what was shown.
    seen = await _turn(executor, agent, "again")
    assert "".join(x.delta for x in seen if isinstance(x, c.TextDelta)) == "Hello again"
    sent = loopback.bodies()[-1]["messages"]
    assert {"role": "assistant", "content": "Once upon a "} in sent


async def test_a_run_s_limits_go_over_the_agent_s(loopback: LoopbackServer) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    agent = loopback_agent(loopback, timeout=hs.Timeout(first_chunk=30, chunk=30))
    loopback.script(text("never", headers_only=True, stall_for=3))
    started = time.monotonic()
    seen = await _turn(executor, agent, "hi", timeout=hs.Timeout(first_chunk=0.5), max_retries=0)
    errors = [x.error for x in seen if isinstance(x, c.ErrorChunk)]
    assert isinstance(errors[0], ModelTimeoutError) and errors[0].limit == "first_chunk"
    assert abs(time.monotonic() - started - 0.5) < SLACK
    loopback.script(text("fine"))
    seen = await _turn(executor, agent, "again")
    assert not [x for x in seen if isinstance(x, c.ErrorChunk)]


async def test_an_approved_call_runs_under_the_tool_limit_and_its_callbacks(
    loopback: LoopbackServer,
) -> None:
    class Q(BaseModel):
        q: str

    async def slow(q: Q, ctx: Any) -> str:
        await asyncio.sleep(5)
        return "never"

    deploy = hs.tool(name="deploy", input_schema=Q, execute=slow, needs_approval=True)
    ends: list[Any] = []
    agent = loopback_agent(loopback, tools=[deploy], timeout=hs.Timeout(tool=0.3))
    executor = hs.Executor(store=hs.MemoryStore())
    loopback.script(tool_calls(("deploy", {"q": "prod"})), text("it timed out"))
    await _turn(executor, agent, "deploy")
    answer = hs.session.ApprovalAnswer("approval-call_0_deploy", True)
    started = time.monotonic()
    seen = [
        x async for x in executor.run(agent, "s1", answers=[answer], on_tool_call_end=ends.append)
    ]
    assert time.monotonic() - started < 0.3 + SLACK + 1.0
    [error] = [x for x in seen if isinstance(x, c.ToolOutputError)]
    assert "timed out after 0.3 s" in error.error_text
    [end] = ends
    assert (end.call.name, end.outcome, end.approved) == ("deploy", "timed_out", True)
    assert (await executor.session("s1")).status == "idle"
