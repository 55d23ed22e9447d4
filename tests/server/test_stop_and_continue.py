"""A turn outlives its client (``on_disconnect="continue"``) and ends on ``POST .../stop``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.server import RunningTurns, StreamRegistry, create_app
from tests.loopback import LoopbackServer, text
from tests.server._asgi import LiveRequest
from tests.server.conftest import chat, message_ids, user

SID = "s1"


def _is(kind: str) -> Any:
    return lambda chunk: isinstance(chunk, dict) and chunk.get("type") == kind


def _types(chunks: list[Any]) -> list[str]:
    return [x["type"] if isinstance(x, dict) else x for x in chunks]


async def _answer(
    app: Any, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """A JSON route's status and body."""
    async with LiveRequest(app, method, path, None, headers) as request:
        await request.read_all()
        return request.status, request.body


async def _until(condition: Any, what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


@pytest.fixture
def gate() -> asyncio.Event:
    return asyncio.Event()


@pytest.fixture
def gated_agent(gate: asyncio.Event) -> hs.Agent:
    """The demo model calls ``open_gate``, which waits until the test sets ``gate``."""

    @hs.tool
    async def open_gate() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "opened"

    return hs.Agent(name="gated", model="helix/demo", tools=[open_gate])


@pytest.fixture
async def hanging_agent(loopback: LoopbackServer) -> AsyncIterator[hs.Agent]:
    """A model that streams some text, then keeps its stream open until its client leaves."""
    loopback.script(text("Once upon a time", hang=True))
    yield hs.Agent(
        name="hang",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )
    # The loopback server (one for the session) notices a closed stream a little later: the
    # next test must not count this one's.
    await _until(lambda: _now(loopback.open_streams == 0), "the model stream was not closed")


async def test_a_turn_whose_client_left_runs_to_its_end_and_stays_resumable(
    executor: hs.Executor, gated_agent: hs.Agent, gate: asyncio.Event
) -> None:
    registry = StreamRegistry()
    app = create_app(executor, gated_agent, streams=registry, generate_message_id=message_ids())
    first = LiveRequest(app, "POST", "/api/chat", chat(SID, user("Please open the gate")))
    async with first:
        seen = await first.read_until(_is("tool-input-available"))
        first.leave()  # a reload: the POST is gone, the turn is not
        await asyncio.sleep(0.05)
        assert (await executor.session(SID)).status == "running"
        async with LiveRequest(app, "GET", f"/api/chat/{SID}/stream") as resumed:
            assert resumed.status == 200
            assert await resumed.read_until(_is("tool-input-available")) == seen
            gate.set()
            rest = await resumed.read_all()
        await first.closed()
    assert _types(rest)[-3:] == ["finish-step", "finish", "[DONE]"]
    assert {"type": "tool-output-available", "toolCallId": "call_demo_1_0_open_gate",
            "output": "opened"} in rest  # fmt: skip
    assert (await executor.session(SID)).status == "idle"
    messages = await executor.ui_messages(SID)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert messages[1]["id"] == "msg-1"
    assert "metadata" not in messages[1]  # it ran to its end: not interrupted
    assert messages[1]["parts"][-1] == {
        "type": "text", "text": "Done: open_gate returned opened.", "state": "done",
    }  # fmt: skip
    assert len(registry) == 0


async def test_stop_ends_the_turn_stores_it_interrupted_and_every_client_gets_abort(
    executor: hs.Executor, hanging_agent: hs.Agent, loopback: LoopbackServer
) -> None:
    app = create_app(executor, hanging_agent, generate_message_id=message_ids())
    async with LiveRequest(app, "POST", "/api/chat", chat(SID, user("Tell a story"))) as live:
        shown = await live.read_until(_is("text-delta"))
        async with LiveRequest(app, "GET", f"/api/chat/{SID}/stream") as follower:
            await follower.read_until(_is("text-delta"))
            stopped = await _answer(app, "POST", f"/api/chat/{SID}/stop")
            assert stopped == (200, b'{"stopped":true}')
            # It answered once the turn had ended: the session is idle by then.
            assert (await executor.session(SID)).status == "idle"
            followed = await follower.read_all()
        rest = await live.read_all()
    text_id = next(x["id"] for x in shown if x["type"] == "text-start")
    ending = [{"type": "text-end", "id": text_id}, {"type": "finish-step"},
              {"type": "message-metadata", "messageMetadata": {"interrupted": True}},
              {"type": "abort", "reason": "stopped"}, "[DONE]"]  # fmt: skip
    assert rest[-5:] == ending
    assert followed[-5:] == ending
    assert "finish" not in _types(rest)
    await _until(lambda: _now(loopback.open_streams == 0), "the model stream was not closed")
    messages = await executor.ui_messages(SID)
    streamed = "".join(x["delta"] for x in shown + rest if _is("text-delta")(x))
    assert messages[1]["parts"][-1]["text"] == streamed
    assert messages[1]["metadata"] == {"interrupted": True}
    # The session is usable at once.
    loopback.script(text("The end."))
    async with LiveRequest(app, "POST", "/api/chat", chat(SID, user("Go on"))) as after:
        assert _types(await after.read_all())[-2:] == ["finish", "[DONE]"]


async def _now(value: bool) -> bool:
    return value


async def test_stop_with_nothing_running_answers_false_and_writes_nothing(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent))
    never = await client.post("/api/chat/never-used/stop")
    assert (never.status_code, never.json()) == (200, {"stopped": False})
    assert await executor.store.get_session("never-used") is None
    await client.post("/api/chat", json=chat(SID, user("Hi")))
    log = await executor.log(SID)
    done = await client.post(f"/api/chat/{SID}/stop")
    assert (done.status_code, done.json()) == (200, {"stopped": False})
    assert await executor.log(SID) == log


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_stop_posted_to_another_replica_stops_the_turn_through_the_store(
    gated_agent: hs.Agent, gate: asyncio.Event, kind: str, tmp_path: Path
) -> None:
    # Two replicas: one store, each app with its own process state (its own RunningTurns).
    lease = {"lease_seconds": 2.0, "lease_renew_seconds": 0.2}
    store: hs.Store = (
        hs.MemoryStore(**lease)
        if kind == "memory"
        else hs.SQLiteStore(str(tmp_path / "replicas.db"), **lease)
    )
    executor = hs.Executor(store=store)
    here = create_app(executor, gated_agent)
    other = create_app(executor, gated_agent)
    async with LiveRequest(here, "POST", "/api/chat", chat(SID, user("Open the gate"))) as live:
        await live.read_until(_is("tool-input-available"))
        started = time.monotonic()
        assert await _answer(other, "POST", f"/api/chat/{SID}/stop") == (200, b'{"stopped":true}')
        assert time.monotonic() - started < 2.0  # within a few renewals, not a lease expiry
        kinds = _types(await live.read_all())
        assert kinds[-2:] == ["abort", "[DONE]"], kinds
    session = await executor.session(SID)
    assert (session.status, session.lease_token) == ("idle", None)
    [assistant] = [m for m in await executor.ui_messages(SID) if m["role"] == "assistant"]
    assert assistant["metadata"] == {"interrupted": True}
    # Nothing runs any more: a second stop has nothing to stop.
    assert await _answer(other, "POST", f"/api/chat/{SID}/stop") == (200, b'{"stopped":false}')
    gate.set()
    await store.close()


async def test_stop_elsewhere_replaces_the_stop_through_the_store(
    executor: hs.Executor, gated_agent: hs.Agent, gate: asyncio.Event
) -> None:
    here = create_app(executor, gated_agent)
    calls: list[str] = []

    async def stop_elsewhere(session_id: str) -> bool:
        calls.append(session_id)
        return True

    wired = create_app(executor, gated_agent, stop_elsewhere=stop_elsewhere)
    async with LiveRequest(here, "POST", "/api/chat", chat(SID, user("Open the gate"))) as live:
        await live.read_until(_is("tool-input-available"))
        assert await _answer(wired, "POST", f"/api/chat/{SID}/stop") == (200, b'{"stopped":true}')
        assert calls == [SID]
        assert (await executor.session(SID)).status == "running"  # it did not stop it here
        gate.set()
        assert _types(await live.read_all())[-2:] == ["finish", "[DONE]"]


async def test_stop_is_authorized_like_every_route(
    executor: hs.Executor, gated_agent: hs.Agent, gate: asyncio.Event
) -> None:
    from helix_stream.errors import PermissionDeniedError

    def authorize(auth: Any, session_id: str) -> None:
        if session_id == SID and auth != "owner":
            raise PermissionDeniedError("not yours")

    app = create_app(
        executor,
        gated_agent,
        authenticate=lambda request: request.headers.get("x-user"),
        authorize=authorize,
    )
    owner = {"x-user": "owner"}
    async with LiveRequest(app, "POST", "/api/chat", chat(SID, user("Gate")), owner) as live:
        await live.read_until(_is("tool-input-available"))
        status, _ = await _answer(app, "POST", f"/api/chat/{SID}/stop", {"x-user": "x"})
        assert status == 403
        assert (await executor.session(SID)).status == "running"
        gate.set()
        assert _types(await live.read_all())[-2:] == ["finish", "[DONE]"]


async def test_a_detached_turn_is_cancelled_after_detached_timeout(
    executor: hs.Executor, hanging_agent: hs.Agent, loopback: LoopbackServer
) -> None:
    app = create_app(executor, hanging_agent, detached_timeout=0.3)
    async with LiveRequest(app, "POST", "/api/chat", chat(SID, user("Tell a story"))) as live:
        await live.read_until(_is("text-delta"))
        live.leave()
        await asyncio.sleep(0.1)
        assert (await executor.session(SID)).status == "running"  # it ran on for a while
        await live.closed(10)
    assert (await executor.session(SID)).status == "idle"
    await _until(lambda: _now(loopback.open_streams == 0), "the model stream was not closed")
    messages = await executor.ui_messages(SID)
    assert messages[1]["metadata"] == {"interrupted": True}


async def test_on_disconnect_cancel_ends_the_turn_with_its_client(
    executor: hs.Executor, hanging_agent: hs.Agent, loopback: LoopbackServer
) -> None:
    app = create_app(executor, hanging_agent, on_disconnect="cancel")
    async with LiveRequest(app, "POST", "/api/chat", chat(SID, user("Tell a story"))) as live:
        await live.read_until(_is("text-delta"))
        await live.disconnect(10)  # returns once the turn has wound down
    assert (await executor.session(SID)).status == "idle"
    assert (await executor.ui_messages(SID))[1]["metadata"] == {"interrupted": True}


def test_on_disconnect_must_be_continue_or_cancel(executor: hs.Executor, agent: hs.Agent) -> None:
    with pytest.raises(ValueError, match="on_disconnect must be 'continue' or 'cancel'"):
        create_app(executor, agent, on_disconnect="keep")


# -- RunningTurns on its own -----------------------------------------------------------------


async def _hang(started: asyncio.Event, closed: list[str]) -> AsyncIterator[c.Chunk]:
    try:
        yield c.Start(message_id="m1")
        started.set()
        await asyncio.Event().wait()
    finally:
        closed.append("closed")


async def test_a_stop_before_the_stream_is_read_ends_it_with_abort_at_once() -> None:
    turns = RunningTurns()
    turn = turns.reserve(SID)
    stopping = asyncio.ensure_future(turns.stop(SID, timeout=5))
    await asyncio.sleep(0)
    assert not stopping.done()  # it waits for the turn to end
    closed: list[str] = []
    stream = turns.track(turn, _hang(asyncio.Event(), closed))
    assert [type(x) async for x in stream] == [c.Abort]
    assert await stopping is True
    assert SID not in turns and len(turns) == 0


async def test_a_refused_turn_is_released_and_a_stop_finds_nothing() -> None:
    turns = RunningTurns()
    turns.release(turns.reserve(SID))
    assert await turns.stop(SID) is False


async def _reading(turns: RunningTurns, closed: list[str]) -> asyncio.Task[list[Any]]:
    """A task that reads a tracked turn which hangs after its first chunk (read by then)."""
    started = asyncio.Event()

    async def read() -> list[Any]:
        return [x async for x in turns.track(turns.reserve(SID), _hang(started, closed))]

    task = asyncio.ensure_future(read())
    await started.wait()
    return task


async def test_a_cancellation_that_is_not_a_stop_goes_through() -> None:
    turns, closed = RunningTurns(), []
    task = await _reading(turns, closed)
    task.cancel()  # a server shutting down, a client gone with on_disconnect="cancel"
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed == ["closed"] and SID not in turns


async def test_a_stop_and_another_cancellation_at_once_is_not_taken_back() -> None:
    turns, closed = RunningTurns(), []
    task = await _reading(turns, closed)
    stopping = asyncio.ensure_future(turns.stop(SID, timeout=5))
    await asyncio.sleep(0)
    task.cancel()  # a second cancellation: the task must end cancelled, not with Abort
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await stopping is True
    assert closed == ["closed"]
