"""``GET /api/chat/{id}/stream``: replay the active stream so far, then follow it live."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import StreamRegistry, create_app
from helix_stream.transformers._sse import encode_sse_bytes
from tests.server._asgi import LiveRequest
from tests.server.conftest import chat, message_ids, user

SID = "s1"


def _is(kind: str) -> Any:
    return lambda chunk: isinstance(chunk, dict) and chunk.get("type") == kind


@pytest.fixture
def gate() -> asyncio.Event:
    return asyncio.Event()


def _gated_app(
    executor: hs.Executor, gate: asyncio.Event, **options: Any
) -> tuple[Any, StreamRegistry]:
    """An app whose agent calls ``open_gate``, which waits until the test sets ``gate``."""

    @hs.tool
    async def open_gate() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "opened"

    registry = StreamRegistry()
    agent = hs.Agent(name="gated", model="helix/demo", tools=[open_gate])
    app = create_app(
        executor, agent, streams=registry, generate_message_id=message_ids(), **options
    )
    return app, registry


@pytest.fixture
def gated_app(executor: hs.Executor, gate: asyncio.Event) -> tuple[Any, StreamRegistry]:
    return _gated_app(executor, gate)


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


async def test_with_on_disconnect_cancel_a_disconnect_cancels_the_turn_and_its_stream(
    executor: hs.Executor, gate: asyncio.Event
) -> None:
    app, registry = _gated_app(executor, gate, on_disconnect="cancel")
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


def _data(event: bytes) -> Any:
    """The UI chunk of one recorded SSE event."""
    assert event.startswith(b"data: ") and event.endswith(b"\n\n"), event
    return json.loads(event[6:])


async def test_a_stream_past_its_byte_bound_is_no_longer_resumable() -> None:
    feed, source = _fed()
    one = len(encode_sse_bytes({"type": "data-n", "data": 0}))
    registry = StreamRegistry(max_stream_bytes=3 * one)
    recorder = registry.record("s", source)
    seen = []
    for i in range(5):
        feed.put_nowait({"type": "data-n", "data": i})
        seen.append(_data(await anext(recorder)))
        # Resumable while every event from the first one is still held.
        assert (registry.get("s") is not None) == (i < 3), i
        assert registry.held == (i + 1) * one if i < 3 else registry.held == 0
    feed.put_nowait(None)
    assert [c async for c in recorder] == []
    assert [c["data"] for c in seen] == [0, 1, 2, 3, 4]  # the live client lost nothing
    assert registry.get("s") is None and len(registry) == 0 and registry.held == 0


async def test_the_default_bound_counts_bytes_not_chunks() -> None:
    # Five 1 MiB chunks: few chunks, many bytes. A bound in chunks (20,000 by default) kept
    # them all; the default byte bound of one stream (4 MiB) must not.
    feed, source = _fed()
    registry = StreamRegistry()
    recorder = registry.record("s", source)
    big = "x" * (1024 * 1024)
    for _ in range(5):
        feed.put_nowait({"type": "data-n", "data": big})
        assert _data(await anext(recorder))["data"] == big  # the live client gets each
        assert registry.held <= registry.max_stream_bytes <= registry.max_bytes
    assert registry.get("s") is None  # past 4 MiB: no longer resumable, nothing held
    assert registry.held == 0
    await recorder.aclose()
    assert len(registry) == 0


async def test_all_streams_together_stay_within_max_bytes() -> None:
    one = len(encode_sse_bytes({"type": "data-n", "data": 0}))
    registry = StreamRegistry(max_bytes=5 * one)
    feed_a, source_a = _fed()
    feed_b, source_b = _fed()
    a = registry.record("a", source_a)
    b = registry.record("b", source_b)
    for i in range(3):
        feed_a.put_nowait({"type": "data-n", "data": i})
        await anext(a)
    for i in range(3):
        feed_b.put_nowait({"type": "data-n", "data": i})
        assert _data(await anext(b))["data"] == i
    # b's third event would have made six: b stops being resumable; a keeps its three.
    assert registry.get("a") is not None and registry.get("b") is None
    assert registry.held == 3 * one
    follower = registry.get("a")
    assert follower is not None
    replay = follower.follow()
    assert [_data(await anext(replay))["data"] for _ in range(3)] == [0, 1, 2]
    feed_a.put_nowait({"type": "finish"})
    for feed in (feed_a, feed_b):
        feed.put_nowait(None)
    assert [_data(e) async for e in a] == [{"type": "finish"}] and [e async for e in b] == []
    # a ended: the follower ends too
    assert [_data(e) async for e in replay] == [{"type": "finish"}]
    assert registry.held == 0 and len(registry) == 0


async def test_streams_past_the_registry_bound_are_served_but_not_registered() -> None:
    registry = StreamRegistry(max_streams=1)
    feed_a, source_a = _fed()
    feed_b, source_b = _fed()
    first = registry.record("a", source_a)
    second = registry.record("b", source_b)
    feed_a.put_nowait({"type": "data-n", "data": 0})
    assert _data(await anext(first))["data"] == 0
    for item in ({"type": "data-n", "data": 1}, None):
        feed_b.put_nowait(item)
    assert [_data(c)["data"] async for c in second] == [1]
    assert registry.get("a") is not None and registry.get("b") is None
    await first.aclose()  # the client left: the source is closed, the stream unregistered
    assert len(registry) == 0
    assert registry.get("a") is None


async def _started(
    registry: StreamRegistry,
) -> tuple[asyncio.Queue[dict[str, Any] | None], AsyncIterator[bytes], AsyncIterator[bytes]]:
    """A recorded stream that sent ``start``, and a follower of it."""
    feed, source = _fed()
    recorder = registry.record("s", source)
    feed.put_nowait({"type": "start"})
    await anext(recorder)
    stream = registry.get("s")
    assert stream is not None
    return feed, recorder, stream.follow()


async def test_a_follower_of_a_stream_cut_short_ends_with_an_error_and_finish() -> None:
    # A stream that passes its bound, or whose recording is closed mid-way, never ends a
    # follower's stream as if the answer were complete (issue 36 part 6).
    one = len(encode_sse_bytes({"type": "data-n", "data": 0}))
    for cut in ("overflow", "closed"):
        feed, recorder, follower = await _started(StreamRegistry(max_stream_bytes=3 * one))
        assert _data(await anext(follower)) == {"type": "start"}
        if cut == "overflow":
            for i in range(3):
                feed.put_nowait({"type": "data-n", "data": i})
                await anext(recorder)
        else:
            await recorder.aclose()
        rest = [_data(e) async for e in follower]
        assert [c["type"] for c in rest][-2:] == ["error", "finish"], (cut, rest)
        assert rest[-1]["finishReason"] == "error"
        await recorder.aclose()


async def test_a_follower_of_a_finished_stream_gets_no_error() -> None:
    feed, recorder, follower = await _started(StreamRegistry())
    feed.put_nowait({"type": "finish", "finishReason": "stop"})
    await anext(recorder)
    feed.put_nowait(None)
    assert [e async for e in recorder] == []
    assert [_data(e)["type"] async for e in follower] == ["start", "finish"]
