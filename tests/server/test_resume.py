"""``GET /api/chat/{id}/stream``: replay the active stream so far, then follow it live."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import StreamRegistry, create_app
from tests.server._asgi import LiveRequest
from tests.server.conftest import chat, message_ids, user

SID = "s1"


def _is(kind: str) -> Any:
    return lambda chunk: isinstance(chunk, dict) and chunk.get("type") == kind


@pytest.fixture
def gate() -> asyncio.Event:
    return asyncio.Event()


@pytest.fixture
def gated_app(executor: hs.Executor, gate: asyncio.Event) -> tuple[Any, StreamRegistry]:
    """An app whose agent calls ``open_gate``, which waits until the test sets ``gate``."""

    @hs.tool
    async def open_gate() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "opened"

    registry = StreamRegistry()
    agent = hs.Agent(name="gated", model="helix/demo", tools=[open_gate])
    app = create_app(executor, agent, streams=registry, generate_message_id=message_ids())
    return app, registry


async def test_no_active_stream_is_204(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent))
    await client.post("/api/chat", json=chat(SID, user("Hi")))
    response = await client.get(f"/api/chat/{SID}/stream")
    assert (response.status_code, response.content) == (204, b"")


async def test_a_resumed_stream_replays_then_follows_live(
    gated_app: tuple[Any, StreamRegistry], gate: asyncio.Event, executor: hs.Executor
) -> None:
    app, registry = gated_app
    async with LiveRequest(
        app, "POST", "/api/chat", chat(SID, user("Please open the gate"))
    ) as first:
        so_far = await first.read_until(_is("tool-input-available"))
        assert len(registry) == 1
        async with LiveRequest(app, "GET", f"/api/chat/{SID}/stream") as resumed:
            assert resumed.status == 200
            # Replay: everything the first client has had so far, in order.
            assert await resumed.read_until(_is("tool-input-available")) == so_far
            # Live: the turn is blocked in the tool, so the resumed stream must still be open.
            waiting = asyncio.ensure_future(resumed.next_chunk())
            await asyncio.sleep(0.05)
            assert not waiting.done() and not resumed.ended
            gate.set()
            rest = [await waiting, *await resumed.read_all()]
            original = so_far + await first.read_all()
            assert so_far + rest == original
    assert original[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    assert {"type": "tool-output-available", "toolCallId": "call_demo_1_0_open_gate",
            "output": "opened"} in rest  # fmt: skip
    assert len(registry) == 0  # removed when the turn ended
    assert (await executor.session(SID)).status == "idle"


async def test_a_resuming_client_that_leaves_does_not_stop_the_turn(
    gated_app: tuple[Any, StreamRegistry], gate: asyncio.Event, executor: hs.Executor
) -> None:
    app, _ = gated_app
    async with LiveRequest(
        app, "POST", "/api/chat", chat(SID, user("Please open the gate"))
    ) as first:
        await first.read_until(_is("tool-input-available"))
        async with LiveRequest(app, "GET", f"/api/chat/{SID}/stream") as resumed:
            await resumed.read_until(_is("start"))
        gate.set()  # the resumer is gone; the turn goes on for the first client
        rest = await first.read_all()
    assert rest[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    assert [m["role"] for m in await executor.ui_messages(SID)] == ["user", "assistant"]


async def test_a_disconnect_cancels_the_turn_and_unregisters_its_stream(
    gated_app: tuple[Any, StreamRegistry], executor: hs.Executor, gate: asyncio.Event
) -> None:
    app, registry = gated_app
    async with LiveRequest(
        app, "POST", "/api/chat", chat(SID, user("Please open the gate"))
    ) as first:
        await first.read_until(_is("tool-input-available"))
        assert (await executor.session(SID)).status == "running"
    # The tool was cancelled while it waited: the session is consistent and idle, no stream.
    assert not gate.is_set()
    assert (await executor.session(SID)).status == "idle"
    assert len(registry) == 0
    async with LiveRequest(app, "GET", f"/api/chat/{SID}/stream") as resumed:
        assert resumed.status == 204


def _fed() -> tuple[asyncio.Queue[dict[str, Any] | None], AsyncIterator[dict[str, Any]]]:
    """A chunk source the test feeds by hand (``None`` ends it)."""
    feed: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def source() -> AsyncIterator[dict[str, Any]]:
        while (item := await feed.get()) is not None:
            yield item

    return feed, source()


async def test_a_stream_past_its_bound_is_no_longer_resumable() -> None:
    feed, source = _fed()
    registry = StreamRegistry(max_chunks=3)
    recorder = registry.record("s", source)
    seen = []
    for i in range(5):
        feed.put_nowait({"type": "data-n", "data": i})
        seen.append(await anext(recorder))
        # Resumable while every chunk from the first one is still held.
        assert (registry.get("s") is not None) == (i < 3), i
    feed.put_nowait(None)
    assert [c async for c in recorder] == []
    assert [c["data"] for c in seen] == [0, 1, 2, 3, 4]  # the live client lost nothing
    assert registry.get("s") is None and len(registry) == 0


async def test_streams_past_the_registry_bound_are_served_but_not_registered() -> None:
    registry = StreamRegistry(max_streams=1)
    feed_a, source_a = _fed()
    feed_b, source_b = _fed()
    first = registry.record("a", source_a)
    second = registry.record("b", source_b)
    feed_a.put_nowait({"type": "data-n", "data": 0})
    assert (await anext(first))["data"] == 0
    for item in ({"type": "data-n", "data": 1}, None):
        feed_b.put_nowait(item)
    assert [c["data"] async for c in second] == [1]
    assert registry.get("a") is not None and registry.get("b") is None
    await first.aclose()  # the client left: the source is closed, the stream unregistered
    assert len(registry) == 0
    assert registry.get("a") is None
