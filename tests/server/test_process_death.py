"""Real uvicorn processes killed mid-answer (README, "Reliability notes"; issue 25 items 1, 2).

- SIGTERM mid-answer (a rolling deploy, uvicorn's default shutdown): the process exits within
  the grace period and the session is ``idle`` with what was streamed stored as interrupted.
- SIGKILL mid-answer: the session stays ``running``, and a restarted server takes it over once
  the lease expired — the next chat answers, no operator.
- Two replicas on PostgreSQL: replica A is killed mid-answer; a chat on replica B succeeds once
  A's lease expired.

Each on SQLite and on PostgreSQL (skipped, with the reason, without a server).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.loopback import LoopbackServer, text
from tests.store import _pg

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0

APP = textwrap.dedent(
    """
    import sys, uvicorn
    import helix_stream as hs
    from helix_stream.server import create_app

    kind, where, schema, api_base, port, LEASE = *sys.argv[1:6], float(sys.argv[6])
    options = {"lease_seconds": LEASE, "lease_renew_seconds": 0.5}
    if kind == "sqlite":
        store = hs.SQLiteStore(where, **options)
    else:
        store = hs.PostgresStore(where, schema=schema, **options)
    # A new chat waits (409) for a dead turn's lease, not steering a turn no process runs.
    agent = hs.Agent(name="chat", model="openai/loopback", max_retries=0, turn_policy="reject",
                     settings={"api_base": api_base, "api_key": "k"})
    app = create_app(hs.Executor(store=store), agent)
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Place:
    """Where the servers' store is: ``kind``, the path or DSN, the PostgreSQL schema."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        if kind == "sqlite":
            self.where, self.schema = str(tmp_path / "chat.db"), "-"
        else:
            self.schema = _pg.new_schema()  # skips without a server
            self.where = _pg.DSN

    def store(self) -> Any:
        import helix_stream as hs

        if self.kind == "sqlite":
            return hs.SQLiteStore(self.where)
        return hs.PostgresStore(self.where, schema=self.schema)


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    yield Place(request.param, tmp_path)
    _pg.drop_schemas()


class Server:
    def __init__(self, place: Place, loopback: LoopbackServer, tmp_path: Path) -> None:
        script = tmp_path / "app.py"
        script.write_text(APP)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, str(script), place.kind, place.where, place.schema,
             loopback.api_base, str(self.port), str(LEASE)],
            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, self.process.communicate()[1][-3000:]
            try:
                if httpx.get(f"{self.url}/api/chat/x/messages", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=30)


@pytest.fixture
def servers(place: Place, loopback: LoopbackServer, tmp_path: Path) -> Iterator[list[Server]]:
    made: list[Server] = []
    yield made
    for server in made:
        server.end()


def body(session_id: str, words: str) -> dict[str, Any]:
    message = {"id": f"u-{words}", "role": "user", "parts": [{"type": "text", "text": words}]}
    return {"id": session_id, "trigger": "submit-message", "messages": [message]}


def chat_until_text(url: str, session_id: str) -> tuple[httpx.Client, Any, Iterator[str]]:
    """Post a chat and read its stream until the first text delta; the stream stays open
    (the rest of its lines: the iterator returned)."""
    client = httpx.Client(timeout=30)
    response = client.send(
        client.build_request("POST", f"{url}/api/chat", json=body(session_id, "first")),
        stream=True,
    )
    assert response.status_code == 200
    lines = response.iter_lines()
    for line in lines:
        if line.startswith("data: {") and json.loads(line[6:])["type"] == "text-delta":
            return client, response, lines
    raise AssertionError("no text before the stream ended")


def chat(url: str, session_id: str, words: str) -> tuple[int, list[str]]:
    response = httpx.post(f"{url}/api/chat", json=body(session_id, words), timeout=30)
    types = [
        json.loads(line[6:])["type"]
        for line in response.text.split("\n")
        if line.startswith("data: {")
    ]
    return response.status_code, types


async def stored(place: Place, session_id: str) -> tuple[str, list[tuple[str, Any, bool]]]:
    store = place.store()
    try:
        record = await store.get_session(session_id)
        assert record is not None
        log = await store.read_log(session_id)
    finally:
        await store.close()
    messages = [
        (r.role, r.payload.get("content"), bool(r.payload.get("_interrupted")))
        for r in log
        if r.role != "context"
    ]
    return record.status, messages


def chat_until_taken_over(url: str, session_id: str) -> tuple[float, list[str]]:
    """Chat until the session is free (409 while the dead turn's lease runs); the wait."""
    start = time.monotonic()
    while True:
        status, types = chat(url, session_id, "second")
        if status != 409:
            assert status == 200
            return time.monotonic() - start, types
        assert time.monotonic() - start < 15, "the session was never freed"
        time.sleep(0.25)


async def test_sigterm_mid_answer_ends_the_turn_as_interrupted_and_idle(
    place: Place, servers: list[Server], loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.script(text("a partial answer", pieces=4, hang=True))
    servers.append(server := Server(place, loopback, tmp_path))
    client, response, lines = chat_until_text(server.url, "deploy")
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    rest = list(lines)  # the stream ends (the turn was ended), not cut
    server.process.wait(timeout=20)
    took = time.monotonic() - started
    response.close()
    client.close()
    assert took < 12, f"the shutdown took {took:.1f} s"
    assert any('"type":"abort"' in line or '"type": "abort"' in line for line in rest), rest
    status, messages = await stored(place, "deploy")
    assert status == "idle"
    assert messages[0][0] == "user"
    assert messages[1][0] == "assistant" and messages[1][2]  # interrupted
    assert messages[1][1] and "a partial answer".startswith(messages[1][1])


async def test_sigkill_mid_answer_then_a_restart_takes_the_session_over(
    place: Place, servers: list[Server], loopback: LoopbackServer, tmp_path: Path
) -> None:
    loopback.script(text("a partial answer", pieces=4, hang=True))
    servers.append(first := Server(place, loopback, tmp_path))
    client, response, _ = chat_until_text(first.url, "crash")
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=20)
    response.close()
    client.close()
    status, _ = await stored(place, "crash")
    assert status == "running"  # left by the dead process
    servers.append(again := Server(place, loopback, tmp_path))
    loopback.script(text("after the crash"))
    waited, types = chat_until_taken_over(again.url, "crash")
    assert "finish" in types and waited < LEASE + 5
    status, messages = await stored(place, "crash")
    assert status == "idle"
    assert [(role, content) for role, content, _ in messages] == [
        ("user", "first"),
        ("assistant", ""),
        ("user", "second"),
        ("assistant", "after the crash"),
    ]
    assert messages[1][2]  # closed as interrupted


async def test_two_replicas_on_postgres_the_other_takes_over_a_killed_ones_session(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    place = Place("postgres", tmp_path)
    replicas: list[Server] = []
    try:
        replicas.append(a := Server(place, loopback, tmp_path))
        replicas.append(b := Server(place, loopback, tmp_path))
        loopback.script(text("a partial answer", pieces=4, hang=True))
        client, response, _ = chat_until_text(a.url, "replicated")
        a.process.send_signal(signal.SIGKILL)
        a.process.wait(timeout=20)
        response.close()
        client.close()
        loopback.script(text("from replica b"))
        waited, types = chat_until_taken_over(b.url, "replicated")
        assert "finish" in types and waited < LEASE + 5
        status, messages = await stored(place, "replicated")
        assert status == "idle" and messages[-1][:2] == ("assistant", "from replica b")
    finally:
        for replica in replicas:
            replica.end()
        _pg.drop_schemas()
