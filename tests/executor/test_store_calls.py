"""How many store calls a turn makes: one snapshot read, then one write per turn boundary.

A counting wrapper around a real SQLiteStore records every call by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server._asgi import sse_data


class CountingStore:
    """Delegates to a store and records the name of every method called."""

    def __init__(self, inner: hs.Store) -> None:
        self._inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr) or name.startswith("_"):
            return attr

        async def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return await attr(*args, **kwargs)

        return counted

    def take(self) -> list[str]:
        calls, self.calls = self.calls, []
        return calls


@pytest.fixture
async def counting(tmp_path: Path) -> Any:
    inner = hs.SQLiteStore(tmp_path / "count.db")
    yield CountingStore(inner)
    await inner.close()


def agent_on(loopback: LoopbackServer, **options: Any) -> hs.Agent:
    llm = loopback.llm()
    return hs.Agent(name="count", model=llm.pop("model"), settings=llm, **options)


async def test_a_plain_turn_on_an_existing_session_makes_three_store_calls(
    counting: CountingStore, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=counting)  # type: ignore[arg-type]
    agent = agent_on(loopback)
    loopback.script(text("one"), text("two"))
    await executor.run(agent, "s", "first").consume()
    counting.take()
    result = executor.run(agent, "s", "second")
    assert await result.text() == "two"
    assert counting.take() == ["read_snapshot", "write_turn", "write_turn"]


async def test_a_plain_chat_post_on_an_existing_session_makes_at_most_four_store_calls(
    counting: CountingStore, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=counting)  # type: ignore[arg-type]
    app = create_app(executor, agent_on(loopback))
    loopback.script(text("one"), text("two"))
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "first"}]}
        await client.post("/api/chat", json={"id": "s", "messages": [user]})
        counting.take()
        again = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "second"}]}
        response = await client.post("/api/chat", json={"id": "s", "messages": [user, again]})
    deltas = [c["delta"] for c in sse_data(response.content) if c != "[DONE]" and "delta" in c]
    assert "".join(deltas) == "two"
    calls = counting.take()
    assert calls == ["read_snapshot", "write_turn", "write_turn"]
    assert len(calls) <= 4


class Q(BaseModel):
    q: str


async def test_tool_approval_and_rewind_turns_read_the_session_once(
    counting: CountingStore, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=counting)  # type: ignore[arg-type]
    lookup = hs.tool(name="lookup", input_schema=Q, execute=lambda q, ctx: {"a": q.q})
    deploy = hs.tool(
        name="deploy", input_schema=Q, execute=lambda q, ctx: "done", needs_approval=True
    )
    agent = agent_on(loopback, tools=[lookup, deploy])
    reads = []
    # A tool round trip: two model calls, one read.
    loopback.script(tool_calls(("lookup", {"q": "x"})), text("found"))
    await executor.run(agent, "s", "look").consume()
    reads.append(counting.take().count("read_snapshot"))
    # A turn that pauses for an approval, then the one that settles it.
    loopback.script(tool_calls(("deploy", {"q": "prod"})), text("deployed"))
    await executor.run(agent, "s", "deploy").consume()
    reads.append(counting.take().count("read_snapshot"))
    answer = hs.session.ApprovalAnswer("approval-call_0_deploy", True)
    await executor.run(agent, "s", answers=[answer]).consume()
    assert (await executor.session("s")).status == "idle"
    reads.append(counting.take().count("read_snapshot"))
    # A rewind, and the turn after it.
    first = (await executor.checkpoints("s"))[0]
    await executor.retry("s", first.id)
    counting.take()
    loopback.script(text("again"))
    await executor.run(agent, "s", "more").consume()
    reads.append(counting.take().count("read_snapshot"))
    assert reads == [1, 1, 1, 1]
