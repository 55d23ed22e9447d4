"""An agent that owns an MCP server, served by the chat server: the stable offer over
``POST /api/chat``, the server closed at the app's shutdown, and a slow MCP call cancelled when
the turn is stopped or its client leaves (the server sees the cancellation)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server._asgi import LiveRequest, sse_data
from tests.server.conftest import chat, client, user

from .conftest import State, stdio_args, tools_bytes, wait_for


def owning_agent(loopback: LoopbackServer, stdio_env: dict[str, str]) -> hs.Agent:
    server = hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo")
    return hs.Agent(
        name="mcp-chat",
        model="openai/loopback",
        tools=[server],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )


def tool_parts(chunks: list[Any]) -> list[tuple[str, Any]]:
    return [
        (c["type"], c.get("toolName") or c.get("output") or c.get("errorText"))
        for c in chunks
        if isinstance(c, dict)
        and c["type"].startswith("tool-")
        and c["type"] not in ("tool-input-start", "tool-input-delta")
    ]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_the_chat_server_keeps_a_sessions_offer_and_closes_the_server_at_shutdown(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    state.hide("added_later")
    executor = hs.Executor(store=hs.MemoryStore())
    app = create_app(executor, owning_agent(loopback, stdio_env))
    async with app.router.lifespan_context(app), client(app) as http:
        loopback.script(tool_calls(("demo__echo", {"text": "one"})), text("first"))
        first = await http.post("/api/chat", json=chat("s1", user("one", id="u1")))
        state.hide("echo")
        loopback.script(tool_calls(("demo__echo", {"text": "two"})), text("second"))
        second = await http.post("/api/chat", json=chat("s1", user("two", id="u2")))
        (pid,) = state.lines("starts")
        assert not _gone(int(pid))
    await wait_for(lambda: _gone(int(pid)))  # the app's shutdown let the server go
    assert tool_parts(sse_data(first.content)) == [
        ("tool-input-available", "demo__echo"),
        ("tool-output-available", {"result": "one"}),
    ]
    (_, refused) = tool_parts(sse_data(second.content))
    assert refused[0] == "tool-output-available" and "tool_unavailable" in json.dumps(refused[1])
    assert state.lines("calls") == ["echo"]
    raw = loopback.requests
    assert len(raw) == 4 and {tools_bytes(r) for r in raw} == {tools_bytes(raw[0])}
    assert b"demo__added_later" not in b"".join(raw)
    assert raw[2].startswith(raw[1][: raw[1].index(b'],"tools":')])


@pytest.mark.parametrize("how", ["stop", "client-leaves"])
async def test_a_slow_mcp_call_is_cancelled_when_the_turn_is_stopped_or_its_client_leaves(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer, how: str
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    agent = owning_agent(loopback, stdio_env)
    on_disconnect = "cancel" if how == "client-leaves" else "continue"
    app = create_app(executor, agent, on_disconnect=on_disconnect)
    loopback.script(tool_calls(("demo__slow", {"seconds": 30})))
    try:
        async with LiveRequest(app, "POST", "/api/chat", chat("s1", user("slow"))) as live:
            await live.read_until(
                lambda c: isinstance(c, dict) and c["type"] == "tool-input-available"
            )
            await wait_for(lambda: state.lines("calls") == ["slow"])
            if how == "stop":
                async with LiveRequest(app, "POST", "/api/chat/s1/stop") as stop:
                    await stop.read_all()
                    assert stop.body == b'{"stopped":true}'
            else:
                live.leave()
            await wait_for(lambda: len(state.lines("cancelled")) == 1)
        for _ in range(200):  # the turn ends once its cancelled call has (10 s at most)
            if (await executor.session("s1")).status == "idle":
                break
            await asyncio.sleep(0.05)
        assert (await executor.session("s1")).status == "idle"
    finally:
        await executor.close()
    assert state.lines("cancelled")[0].startswith("slow ")
