"""SharedStreamRegistry in one process: what a follower reads comes from PostgreSQL, not memory.

Two apps share one PostgresStore schema (as two replicas would): a turn runs on ``first``, a
client that reconnects to ``second`` gets it whole. Publishing that fails never touches the
live client."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.server import SharedStreamRegistry, StreamRegistry, create_app
from helix_stream.store.postgres import PostgresStreamLog
from tests.server._asgi import LiveRequest
from tests.server.conftest import chat, user
from tests.store import _pg

SID = "shared"


def _is(kind: str) -> Any:
    return lambda chunk: isinstance(chunk, dict) and chunk.get("type") == kind


@pytest.fixture
async def store() -> AsyncIterator[hs.PostgresStore]:
    made = _pg.make_store()
    try:
        yield made
    finally:
        await made.close()
        _pg.drop_schemas()


def _gated(store: hs.Store, gate: asyncio.Event, **kwargs: Any) -> Any:
    # Loaded now, as an app's startup would: imported by the first request instead, it can
    # take longer than a LiveRequest waits for the response to start on a busy machine.
    litellm_module()

    @hs.tool
    async def open_gate() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "opened"

    agent = hs.Agent(name="gated", model="helix/demo", tools=[open_gate])
    return create_app(hs.Executor(store=store), agent, **kwargs)


async def test_a_postgres_executor_gets_the_shared_registry_by_default(
    store: hs.PostgresStore,
) -> None:
    from helix_stream.server._routes import default_registry

    assert isinstance(default_registry(hs.Executor(store=store)), SharedStreamRegistry)
    assert isinstance(default_registry(hs.Executor(store=hs.MemoryStore())), StreamRegistry)


async def test_another_app_on_the_same_schema_resumes_the_turn_so_far_then_live(
    store: hs.PostgresStore,
) -> None:
    gate = asyncio.Event()
    first = _gated(store, gate)
    other = _pg.make_store(schema=store.schema)  # a second process's own store
    try:
        second = _gated(other, gate)
        async with LiveRequest(first, "POST", "/api/chat", chat(SID, user("Open the gate"))) as a:
            so_far = await a.read_until(_is("tool-input-available"))
            await asyncio.sleep(0.5)  # past one flush interval: the batch is in the table
            async with LiveRequest(second, "GET", f"/api/chat/{SID}/stream") as resumed:
                assert resumed.status == 200
                assert await resumed.read_until(_is("tool-input-available")) == so_far
                waiting = asyncio.ensure_future(resumed.next_chunk())
                await asyncio.sleep(0.2)
                assert not waiting.done()  # blocked in the tool: still live
                gate.set()
                rest = [await waiting, *await resumed.read_all()]
                original = so_far + await a.read_all()
        assert so_far + rest == original
        assert original[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
        async with LiveRequest(second, "GET", f"/api/chat/{SID}/stream") as late:
            assert late.status == 204
    finally:
        await other.close()


async def test_a_stream_that_cannot_be_opened_is_served_whole_and_not_resumable(
    store: hs.PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> None:
        raise hs.StoreUnavailableError("down")

    registry = SharedStreamRegistry(store)
    monkeypatch.setattr(registry.log, "open", broken)
    gate = asyncio.Event()
    gate.set()
    app = _gated(store, gate, streams=registry)
    async with LiveRequest(app, "POST", "/api/chat", chat(SID, user("Open the gate"))) as a:
        chunks = await a.read_all()
    assert chunks[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    async with LiveRequest(app, "GET", f"/api/chat/{SID}/stream") as late:
        assert late.status == 204


async def test_a_failing_publish_leaves_the_live_client_whole_and_the_stream_unresumable(
    store: hs.PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []

    async def broken(stream_id: str, seq: int, *args: Any, **kwargs: Any) -> None:
        calls.append(seq)
        raise hs.StoreUnavailableError("down")

    registry = SharedStreamRegistry(store, poll_interval=0.1)
    monkeypatch.setattr(registry.log, "append", broken)
    gate = asyncio.Event()
    gate.set()
    app = _gated(store, gate, streams=registry)
    async with LiveRequest(app, "POST", "/api/chat", chat(SID, user("Open the gate"))) as a:
        chunks = await a.read_all()
    assert chunks[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    assert calls == [1]  # the first batch failed; no later one was tried
    assert (await store.get_session(SID)).status == "idle"
    # Its stream was opened but never finished: a follower stops once the session is idle
    # and a further poll brings nothing, instead of waiting forever.
    follower = await registry.resume(SID)
    assert follower is not None
    assert await asyncio.wait_for(_drain(follower), 5) == b""


async def _drain(stream: AsyncIterator[bytes]) -> bytes:
    return b"".join([piece async for piece in stream])


async def test_finished_streams_are_dropped_after_keep_for(store: hs.PostgresStore) -> None:
    log = PostgresStreamLog(store)
    await log.open("old", "stream-old", keep_for=600)
    await log.append("stream-old", 1, "data: {}\n\n", finished=True)
    assert (await log.read("old")).batches == [(1, "data: {}\n\n")]
    await log.open("new", "stream-new", keep_for=0)  # drops what has finished
    assert (await log.read("old")).stream_id is None
    assert (await log.read("new")).stream_id == "stream-new"


async def _stream_rows(store: hs.PostgresStore) -> tuple[Any, ...]:
    import psycopg

    with psycopg.connect(_pg.DSN) as conn:
        return tuple(
            conn.execute(f'SELECT * FROM "{store.schema}".{table} ORDER BY 1').fetchall()
            for table in ("ui_streams", "ui_stream_events")
        )


@pytest.mark.parametrize("bad_id", ["", "a\x00b", "x" * 513])
async def test_a_bad_session_id_is_refused_and_nothing_is_written(
    store: hs.PostgresStore, bad_id: str
) -> None:
    log = PostgresStreamLog(store)
    await log.open("good", "stream-good", keep_for=600)
    before = await _stream_rows(store)
    with pytest.raises(hs.InvalidRequestError):
        await log.open(bad_id, "stream-bad", keep_for=0)
    with pytest.raises(hs.InvalidRequestError):
        await log.read(bad_id)
    assert await _stream_rows(store) == before


async def test_a_turn_whose_client_left_is_followed_and_stopped_from_another_replica(
    store: hs.PostgresStore,
) -> None:
    gate = asyncio.Event()
    first = _gated(store, gate)  # on_disconnect="continue": the default
    other = _pg.make_store(schema=store.schema)
    try:
        second = _gated(other, gate)
        async with LiveRequest(first, "POST", "/api/chat", chat(SID, user("Open the gate"))) as a:
            so_far = await a.read_until(_is("tool-input-available"))
            a.leave()  # a reload: the turn runs on in the first process
            await asyncio.sleep(0.5)  # past one flush interval
            async with LiveRequest(second, "GET", f"/api/chat/{SID}/stream") as resumed:
                assert await resumed.read_until(_is("tool-input-available")) == so_far
                # The second replica stops the turn the first one runs: through the store,
                # read back by the turn's lease heartbeat (every 3 s by default).
                started = time.monotonic()
                async with LiveRequest(second, "POST", f"/api/chat/{SID}/stop") as stop:
                    await stop.read_all()
                    assert stop.body == b'{"stopped":true}'
                assert time.monotonic() - started < 6.0
                rest = await resumed.read_all()
            await a.closed()
        assert [c["type"] if isinstance(c, dict) else c for c in rest][-3:] == [
            "message-metadata",
            "abort",
            "[DONE]",
        ]
        assert (await hs.Executor(store=other).session(SID)).status == "idle"
        assert not gate.is_set()  # the tool was cancelled, not answered
    finally:
        await other.close()


async def test_a_follower_of_a_turn_whose_lease_expired_ends_with_an_error_and_finish(
    store: hs.PostgresStore,
) -> None:
    # What a replica killed mid-answer leaves: its stream published so far and unfinished,
    # its session running under a lease nobody renews.
    from helix_stream.store import Lease, NewSession, TurnWrite

    held = Lease(token="dead-turn", seconds=0.3)
    claim = TurnWrite(create=NewSession(agent_name="a"), status="running", lease=held)
    assert (await store.write_turn(SID, claim)).applied
    log = PostgresStreamLog(store)
    await log.open(SID, "stream-dead", keep_for=600)
    so_far = 'data: {"type":"start"}\n\ndata: {"type":"text-delta","id":"t","delta":"Hal"}\n\n'
    await log.append("stream-dead", 1, so_far)
    registry = SharedStreamRegistry(store, poll_interval=0.2)
    follower = await registry.resume(SID)
    assert follower is not None
    got = (await asyncio.wait_for(_drain(follower), 10)).decode()
    assert got.startswith(so_far)
    rest = got[len(so_far) :]
    assert '"type":"error"' in rest and rest.endswith(
        '{"type":"finish","finishReason":"error"}\n\n'
    )
    assert "[DONE]" not in rest  # the response adds it, once
