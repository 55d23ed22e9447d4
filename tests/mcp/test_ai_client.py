"""The AI SDK's own chat (the ``ai`` package's ``AbstractChat``, what ``useChat`` wraps) against
the chat server of an agent that owns an MCP server: it renders the MCP tool parts, and a
session keeps its first offer while the server changes its list."""

from __future__ import annotations

import json
import sys
from typing import Any

import httpx
import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.server import create_app
from tests.conformance._client import missing_node_reason, run_chat, serve_app
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import State, stdio_args, tools_bytes, wait_for

VERSION = 7


def _tool_parts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in messages for p in m["parts"] if p["type"].startswith("tool-")]


async def test_the_ai_client_renders_mcp_tool_parts_across_a_changing_server(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    state.hide("added_later")
    server = hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo")
    agent = hs.Agent(
        name="mcp-ai",
        model="openai/loopback",
        tools=[server],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )
    app = create_app(hs.Executor(), agent, client_version=VERSION)
    with serve_app(app) as base_url:
        url = f"{base_url}/api/chat"
        loopback.script(tool_calls(("demo__echo", {"text": "one"})), text("first"))
        first = run_chat(url, {"id": "s1", "actions": [{"send": {"text": "one"}}]}, VERSION)
        state.hide("echo")
        loopback.script(tool_calls(("demo__echo", {"text": "two"})), text("second"))
        second = run_chat(url, {"id": "s1", "actions": [{"send": {"text": "two"}}]}, VERSION)
        stored = httpx.get(f"{base_url}/api/chat/s1/messages", timeout=10).json()
        (pid,) = state.lines("starts")
    await wait_for(lambda: not _running(int(pid)))  # the app's shutdown closed the server
    for result in (first, second):
        assert all(step.get("error") is None for step in result["steps"]), result
    (rendered,) = _tool_parts(first["steps"][-1]["messages"])
    assert rendered["type"] == "tool-demo__echo" and rendered["state"] == "output-available"
    assert (rendered["input"], rendered["output"]) == ({"text": "one"}, {"result": "one"})
    (gated,) = _tool_parts(second["steps"][-1]["messages"])
    assert gated["type"] == "tool-demo__echo" and gated["state"] == "output-available"
    assert "tool_unavailable" in json.dumps(gated["output"])
    assert [p["output"] for p in _tool_parts(stored)] == [rendered["output"], gated["output"]]
    assert state.lines("calls") == ["echo"]
    raw = loopback.requests
    assert len(raw) == 4 and {tools_bytes(r) for r in raw} == {tools_bytes(raw[0])}


def _running(pid: int) -> bool:
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
