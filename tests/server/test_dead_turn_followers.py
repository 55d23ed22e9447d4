"""A follower of a dead turn ends with an ``error`` and a ``finish`` chunk, never a bare
``[DONE]`` (issue 36 part 6): two real uvicorn processes on one PostgreSQL; replica A is
SIGKILLed mid-answer while a client follows the turn from replica B (``GET .../stream``).

- a new chat on B takes the session over (once A's lease expired) before the follower notices
  the dead turn: the follower's stream was replaced by the new turn's;
- nobody chats: the follower notices the expired lease by itself.

``useChat`` would otherwise show the truncated answer as if it were complete.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.loopback import LoopbackServer, text
from tests.server import test_process_death
from tests.server.test_process_death import (
    Place,
    Server,
    chat_until_taken_over,
    chat_until_text,
)
from tests.store import _pg

# The replicas' app, with a follower's poll of POLL seconds (a notification wakes it sooner):
# longer than the takeover takes, so that in the first test the new chat's stream replaces the
# dead one before the follower reads again — the order the bug needed, made certain.
POLL = 6.0
APP = test_process_death.APP.replace(
    "app = create_app(hs.Executor(store=store), agent)",
    "from helix_stream.server import SharedStreamRegistry\n"
    "app = create_app(hs.Executor(store=store), agent,\n"
    f"                 streams=SharedStreamRegistry(store, poll_interval={POLL}))",
)


@pytest.fixture(autouse=True)
def slow_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    assert APP != test_process_death.APP
    monkeypatch.setattr(test_process_death, "APP", APP)


class Follower:
    """``GET .../stream`` on a replica, read in a thread until the response ends."""

    def __init__(self, url: str, session_id: str) -> None:
        self.events: list[Any] = []
        self.texted = threading.Event()
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(url, session_id), daemon=True)
        self._thread.start()

    def _read(self, url: str, session_id: str) -> None:
        try:
            with httpx.stream("GET", f"{url}/api/chat/{session_id}/stream", timeout=30) as got:
                assert got.status_code == 200, got.status_code
                for line in got.iter_lines():
                    if line.startswith("data: "):
                        data = line[6:]
                        self.events.append(data if data == "[DONE]" else json.loads(data))
                        if data != "[DONE]" and self.events[-1]["type"] == "text-delta":
                            self.texted.set()
        finally:
            self.ended.set()

    def types(self) -> list[str]:
        return [e if isinstance(e, str) else e["type"] for e in self.events]


def kill(server: Server) -> None:
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=20)


def follow_a_turn_then_kill_its_replica(
    loopback: LoopbackServer, tmp_path: Path, session_id: str
) -> Iterator[tuple[Server, Follower]]:
    place = Place("postgres", tmp_path)  # skips, with the reason, without a server
    replicas: list[Server] = []
    try:
        replicas.append(a := Server(place, loopback, tmp_path))
        replicas.append(b := Server(place, loopback, tmp_path))
        loopback.script(text("a partial answer", pieces=4, hang=True))
        client, response, _ = chat_until_text(a.url, session_id)
        follower = Follower(b.url, session_id)
        assert follower.texted.wait(20), follower.events
        kill(a)
        response.close()
        client.close()
        yield b, follower
    finally:
        for replica in replicas:
            replica.end()
        _pg.drop_schemas()


def assert_ended_with_error_and_finish(follower: Follower) -> None:
    assert follower.ended.wait(30), "the follower never ended"
    types = follower.types()
    assert types[:2] == ["start", "start-step"] and "text-delta" in types
    assert types[-3:] == ["error", "finish", "[DONE]"], types
    assert types.count("[DONE]") == 1
    assert "stopped before it finished" in follower.events[-3]["errorText"]
    assert follower.events[-2]["finishReason"] == "error"


def test_a_follower_ends_with_error_and_finish_when_a_new_chat_takes_the_session_over(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    for b, follower in follow_a_turn_then_kill_its_replica(loopback, tmp_path, "taken"):
        loopback.script(text("from replica b"))
        waited, types = chat_until_taken_over(b.url, "taken")
        assert "finish" in types and waited < POLL - 1  # before the follower read again
        assert_ended_with_error_and_finish(follower)


def test_a_follower_ends_with_error_and_finish_once_the_dead_turns_lease_expired(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    for _, follower in follow_a_turn_then_kill_its_replica(loopback, tmp_path, "left"):
        assert_ended_with_error_and_finish(follower)
