"""Two chats racing for one session, any object as ``auth``, and failed turns in the log."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import StreamRegistry, create_app
from helix_stream.session._meta import TurnMeta
from tests.loopback import LoopbackServer, error, text
from tests.server._asgi import LiveRequest
from tests.server.conftest import chat, client, user


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_two_posts_at_once_one_streams_the_other_gets_409_and_the_winner_resumes(
    store: str, tmp_path: Path
) -> None:
    gate = asyncio.Event()

    @hs.tool
    async def wait_for_gate() -> str:
        """Wait for the gate."""
        await gate.wait()
        return "opened"

    made = hs.MemoryStore() if store == "memory" else hs.SQLiteStore(tmp_path / "race.db")
    executor = hs.Executor(store=made)
    registry = StreamRegistry()
    agent = hs.Agent(name="race", model="helix/demo", tools=[wait_for_gate])
    # Two first messages race for the claim; refused, not steered, to count the winners.
    app = create_app(executor, agent, streams=registry, turn_policy="reject")
    for run in range(10):
        sid = f"race-{run}"
        bodies = [chat(sid, user("Please wait for the gate", f"u{i}")) for i in range(2)]
        requests = [LiveRequest(app, "POST", "/api/chat", body) for body in bodies]
        opened = await asyncio.gather(*(r.__aenter__() for r in requests))
        statuses = sorted(r.status for r in opened)
        assert statuses == [200, 409], statuses
        winner = next(r for r in opened if r.status == 200)
        loser = next(r for r in opened if r.status == 409)
        assert b'"code":"state_session_busy"' in loser.body + await _rest(loser)
        await winner.read_until(
            lambda c: isinstance(c, dict) and c["type"] == "tool-input-available"
        )
        async with LiveRequest(app, "GET", f"/api/chat/{sid}/stream") as resumed:
            assert resumed.status == 200  # the winner's stream, not the loser's
            gate.set()
            replayed = await resumed.read_all()
        rest = await winner.read_all()
        assert replayed[-2:] == rest[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
        for r in opened:
            await r.disconnect()
        gate.clear()
        assert (await executor.session(sid)).status == "idle"
    await made.close()


async def _rest(request: LiveRequest) -> bytes:
    while not request.ended:
        await request.next_chunk()
    return request.body


@dataclass(frozen=True)
class User:
    id: str
    token: str


async def test_any_object_works_as_auth_and_only_its_identity_is_stored(tmp_path: Path) -> None:
    path = tmp_path / "auth.db"
    store = hs.SQLiteStore(path)
    seen: list[Any] = []

    @hs.tool
    def whoami() -> str:
        """Who is asking."""
        info = hs.current_session().auth
        seen.append((info.current, info.initiator))
        return "ok"

    agent = hs.Agent(name="auth", model="helix/demo", tools=[whoami])
    by_default = create_app(
        hs.Executor(store=store), agent, lambda request: User("u-1", "tok-SECRET-1")
    )
    with_identity = create_app(
        hs.Executor(store=store, identify=lambda auth: auth.id),
        agent,
        lambda request: User("u-2", "tok-SECRET-2"),
    )
    dict_auth = create_app(
        hs.Executor(store=store), agent, lambda request: {"user": "u-3", "token": "tok-SECRET-3"}
    )
    for app, sid in ((by_default, "a"), (with_identity, "b"), (dict_auth, "c")):
        async with client(app) as c:
            response = await c.post("/api/chat", json=chat(sid, user("whoami")))
            assert response.status_code == 200
            assert b'"type":"finish","finishReason":"stop"' in response.content, response.content
    assert seen == [
        (User("u-1", "tok-SECRET-1"), None),
        (User("u-2", "tok-SECRET-2"), "u-2"),
        ({"user": "u-3", "token": "tok-SECRET-3"}, None),
    ]
    initiators = []
    for sid in "abc":
        record = await store.get_session(sid)
        assert record is not None
        initiators.append(TurnMeta.read(record.meta).initiator)
    assert initiators == [None, "u-2", None]
    await store.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"tok-SECRET" not in stored


async def test_an_identity_that_cannot_be_stored_is_refused_before_anything_is_written() -> None:
    executor = hs.Executor(identify=lambda auth: auth)  # a User object is not JSON
    agent = hs.Agent(name="auth", model="helix/demo")
    with pytest.raises(TypeError, match="identify"):
        executor.run(agent, "s", "hi", auth=User("u", "t"))
    assert await executor.store.get_session("s") is None


async def test_a_failed_turn_is_logged_once_with_its_session_turn_and_error_type(
    loopback: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    executor = hs.Executor()
    llm = loopback.llm()
    agent = hs.Agent(name="fails", model=llm.pop("model"), settings=llm)
    # Enough failures for whatever retries the HTTP client underneath makes.
    loopback.script(*[error(500, "upstream said sk-SECRET-in-error") for _ in range(6)])
    with caplog.at_level(logging.WARNING, logger="helix_stream"):
        await executor.run(agent, "failing", "hi").consume()
    records = [r for r in caplog.records if getattr(r, "event", None) == "core.turn.failed"]
    assert len(records) == 1
    record = records[0]
    assert (record.levelno, record.session_id, record.error_type) == (  # type: ignore[attr-defined]
        logging.WARNING,
        "failing",
        "ModelUnavailableError",
    )
    assert record.turn_id.startswith("msg-")  # type: ignore[attr-defined]
    assert "sk-SECRET" not in caplog.text
    # The session stays usable: the next turn runs.
    loopback.reset()
    loopback.script(text("fine"))
    assert await executor.run(agent, "failing", "again").text() == "fine"


async def test_a_turn_that_fails_before_writing_is_logged_and_writes_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    executor = hs.Executor()
    agent = hs.Agent(name="bad", model="helix/demo")
    bad_message = {"role": "user", "content": float("nan")}  # not JSON: no store can hold it
    with caplog.at_level(logging.WARNING, logger="helix_stream"):
        result = executor.run(agent, "nan", bad_message)
        await result.consume()
    assert isinstance(result.error, ValueError)
    assert [getattr(r, "session_id", None) for r in caplog.records] == ["nan"]
    assert await executor.store.get_session("nan") is None


async def test_a_continue_of_a_missing_session_is_404_and_writes_nothing() -> None:
    executor = hs.Executor()
    app = create_app(executor, hs.Agent(name="x", model="helix/demo"))
    assistant = {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}
    async with client(app) as c:
        response = await c.post("/api/chat", json=chat("ghost", assistant))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "state_session_not_found"
    assert await executor.store.get_session("ghost") is None
