"""An MCP call whose server answers with garbage ends at once, or within the default limit of an
MCP call, as an error result the model reads, and the connection is reset: the next call works
(issue 36 part 6). The chat app over real HTTP (uvicorn), a loopback model that calls the bad
tool then ``echo``, and ``bad_server.py`` over stdio: a line that is not JSON, a malformed error
object, no answer at all (the limit scaled down from 30 s to 1 s)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import helix_stream as hs
from helix_stream.mcp import _connection
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, text, tool_calls
from tests.mcp.conftest import NO_SDK, State
from tests.server._live import serving
from tests.server.conftest import chat, user

pytest.importorskip("mcp", reason=NO_SDK)

BAD = Path(__file__).with_name("bad_server.py")
LIMIT = 1.0


def events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: {")]


@pytest.mark.parametrize(
    ("tool", "says"),
    [
        ("garbage", "not valid JSON-RPC"),
        ("malformed", "not valid JSON-RPC"),
        ("silent", f"did not answer within {LIMIT:g} s"),
    ],
)
async def test_a_bad_answer_is_an_error_result_and_the_next_call_works(
    tool: str,
    says: str,
    state: State,
    loopback: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_connection, "CALL_TIMEOUT", LIMIT)
    assert _connection.CALL_TIMEOUT == LIMIT
    server = hs.MCPServer.stdio(
        sys.executable, [str(BAD)], env={"HELIX_MCP_STATE": str(state.path)}, name="bad"
    )
    agent = hs.Agent(name="mcp", tools=[server], max_retries=0, **_model(loopback))
    loopback.script(
        tool_calls((f"bad__{tool}", {"text": "x"})),
        tool_calls(("bad__echo", {"text": "after the reset"})),
        text("done"),
    )
    executor = hs.Executor(store=hs.MemoryStore())
    app = create_app(executor, agent)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
        started = time.monotonic()
        response = await client.post("/api/chat", json=chat("s", user("go")))
        took = time.monotonic() - started
    assert response.status_code == 200
    got = events(response.text)
    errors = [e for e in got if e["type"] == "tool-output-error"]
    outputs = [e for e in got if e["type"] == "tool-output-available"]
    assert len(errors) == 1, got  # its text masked for the page; the model's below
    assert [o["output"] for o in outputs] == ["after the reset"]
    assert got[-1]["type"] == "finish"
    assert took < LIMIT + 10, took  # garbage at once; silence at the limit
    assert len(state.lines("starts")) == 2  # the connection (a process) was reset
    # What the model read for the bad call: the same error, in the next request.
    sent = loopback.bodies()[1]["messages"]
    assert any(m["role"] == "tool" and says in str(m["content"]) for m in sent)


def _model(loopback: LoopbackServer) -> dict[str, Any]:
    return {"model": "openai/loopback", "settings": {"api_base": loopback.api_base, "api_key": "k"}}
