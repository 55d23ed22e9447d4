"""The chat server's default limits: a stall never holds a chat open past them; the agent's
``timeout=`` and a request's ``run_options`` go over them, limit by limit."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import helix_stream as hs
from helix_stream.server import SERVER_TIMEOUT, _routes as routes_module, create_app
from tests.loop.test_timeouts_agent import loopback_agent
from tests.loopback import LoopbackServer, Reply, text
from tests.server.conftest import chat, user

SLACK = 0.5
Client = Callable[[Any], httpx.AsyncClient]


pytestmark = pytest.mark.usefixtures("warm_loopback")  # litellm's set-up is not a stall


def _stall() -> Reply:
    return Reply(deltas=[{"content": w} for w in ("Once ", "upon ", "a ", "time")], stall_after=3)


def _events(body: str) -> list[dict[str, Any]]:
    lines = [line[6:] for line in body.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


async def _post(client: httpx.AsyncClient, sid: str, words: str, uid: str) -> tuple[list, float]:
    started = time.monotonic()
    response = await client.post("/api/chat", json=chat(sid, user(words, uid)))
    assert response.status_code == 200
    return _events(response.text), time.monotonic() - started


def test_the_defaults_are_the_documented_ones() -> None:
    assert (SERVER_TIMEOUT.first_chunk, SERVER_TIMEOUT.chunk) == (35.0, 30.0)
    assert SERVER_TIMEOUT.total is None and SERVER_TIMEOUT.tool is None


async def test_a_stall_ends_the_turn_at_the_server_default_and_the_chat_goes_on(
    loopback: LoopbackServer, make_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server's defaults, shortened for the test (routes() reads them when it is called).
    monkeypatch.setattr(routes_module, "SERVER_TIMEOUT", hs.Timeout(first_chunk=1, chunk=0.5))
    executor = hs.Executor(store=hs.MemoryStore())
    # stream_retries=0: a stall after text ends the turn (recovery: test_stream_retries.py).
    client = make_client(create_app(executor, loopback_agent(loopback, stream_retries=0)))
    loopback.script(_stall(), text("Hello again"))
    events, took = await _post(client, "s1", "tell me", "u1")
    assert [e["type"] for e in events][-1] in ("error", "finish")
    assert any(e["type"] == "error" for e in events) and abs(took - 0.5) < SLACK
    stored = await executor.ui_messages("s1")
    assert stored[-1]["metadata"] == {"interrupted": True, "error": "model_timeout"}
    assert [p["text"] for p in stored[-1]["parts"] if p["type"] == "text"] == ["Once upon a "]
    events, _ = await _post(client, "s1", "again", "u2")
    deltas = [e["delta"] for e in events if e["type"] == "text-delta"]
    assert "".join(deltas) == "Hello again"


async def test_no_first_byte_ends_the_turn_at_the_first_chunk_default(
    loopback: LoopbackServer, make_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_module, "SERVER_TIMEOUT", hs.Timeout(first_chunk=0.7, chunk=0.5))
    executor = hs.Executor(store=hs.MemoryStore())
    client = make_client(create_app(executor, loopback_agent(loopback, max_retries=0)))
    loopback.script(text("never", wait_headers=True, stall_for=3))
    events, took = await _post(client, "s1", "hi", "u1")
    assert any(e["type"] == "error" for e in events) and abs(took - 0.7) < SLACK


async def test_the_agent_s_and_the_request_s_limits_go_over_the_defaults(
    loopback: LoopbackServer, make_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_module, "SERVER_TIMEOUT", hs.Timeout(first_chunk=30, chunk=30))
    executor = hs.Executor(store=hs.MemoryStore())
    # Over the server's chunk; stream_retries=0: the stall after text ends the turn.
    agent = loopback_agent(loopback, timeout=hs.Timeout(chunk=0.5), stream_retries=0)
    loopback.script(_stall())
    client = make_client(create_app(executor, agent))
    events, took = await _post(client, "s1", "hi", "u1")
    assert any(e["type"] == "error" for e in events) and abs(took - 0.5) < SLACK

    def per_request(request: Any, auth: Any) -> dict[str, Any]:
        return {"timeout": hs.Timeout(chunk=0.8)}  # over the agent's

    loopback.script(_stall())
    client = make_client(create_app(executor, agent, run_options=per_request))
    events, took = await _post(client, "s2", "hi", "u1")
    assert any(e["type"] == "error" for e in events) and abs(took - 0.8) < SLACK


async def test_timeout_none_switches_the_defaults_off(
    loopback: LoopbackServer, make_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes_module, "SERVER_TIMEOUT", hs.Timeout(chunk=0.3))
    executor = hs.Executor(store=hs.MemoryStore())
    loopback.script(text("a b c", pieces=3, delay=0.5))  # slower than the patched default
    client = make_client(create_app(executor, loopback_agent(loopback), timeout=None))
    events, _ = await _post(client, "s1", "hi", "u1")
    assert not any(e["type"] == "error" for e in events)
