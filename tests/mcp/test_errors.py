"""Servers that cannot be used: typed errors naming the server and what to check."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.errors import InvalidRequestError, ToolProviderError
from tests.loopback import LoopbackServer, text, tool_calls

from .test_http import exporter_and_settings
from .test_telemetry import tool_span


async def provider_error(server: hs.MCPServer) -> ToolProviderError:
    async with server:
        with pytest.raises(ToolProviderError) as caught:
            await server.tools()
    return caught.value


async def test_a_command_that_does_not_exist() -> None:
    error = await provider_error(
        hs.MCPServer.stdio("/no/such/mcp-server", ["--token", "arg-secret-31"], name="broken")
    )
    assert error.message.startswith("MCP server 'broken' could not be started: the command")
    assert "Check the command, its arguments and cwd." in error.message
    assert "arg-secret" not in error.message and error.server == "broken"


async def test_a_server_that_exits_at_once() -> None:
    error = await provider_error(
        hs.MCPServer.stdio(sys.executable, ["-c", "raise SystemExit(3)"], name="quits")
    )
    assert "MCP server 'quits'" in error.message and "ended before it answered" in error.message
    assert "its stderr says why" in error.message


async def test_a_server_that_never_answers_times_out_and_is_stopped() -> None:
    mute = hs.MCPServer.stdio(
        sys.executable, ["-c", "import time; time.sleep(60)"], name="mute", connect_timeout=1
    )
    error = await provider_error(mute)
    assert "MCP server 'mute'" in error.message and "did not answer within 1 s" in error.message


async def test_a_json_rpc_error_is_an_error_result_with_its_code(
    stdio_server: hs.MCPServer, loopback: LoopbackServer
) -> None:
    exporter, telemetry = exporter_and_settings()
    loopback.script(tool_calls(("demo__refuse", {})), text("ok"))
    run = hs.stream_text(
        prompt="go", tools=await stdio_server.tools(), telemetry=telemetry, **loopback.llm()
    )
    chunks = [c async for c in run]
    error = next(c.error_text for c in chunks if c.type == "tool-output-error")
    assert "MCP server 'demo' refused the call: no such account (JSON-RPC error -32602)" in error
    span = tool_span(exporter, "demo__refuse")
    assert (span["rpc.response.status_code"], span["error.type"]) == ("-32602", "-32602")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda: hs.MCPServer.stdio("python", name="9lives"), "must start with a letter"),
        (lambda: hs.MCPServer.stdio("python", name="ok", prefix="a__b"), "prefix 'a__b'"),
        (lambda: hs.MCPServer.stdio("", name="ok"), "needs a command"),
        (lambda: hs.MCPServer.stdio("python", "server.py", name="ok"), "list of strings"),
        (lambda: hs.MCPServer.stdio("python", env={"A": 1}, name="ok"), "env= takes"),
        (
            lambda: hs.MCPServer.stdio("python", name="ok", request_env="TOKEN"),
            "collection of names",
        ),
        (lambda: hs.MCPServer.http("ftp://x/mcp", name="ok"), "http:// or https://"),
        (lambda: hs.MCPServer.http("http://x/mcp", name="ok", transport="ws"), "transport="),
        (lambda: hs.MCPServer.http("http://x/mcp", name="ok", protocol="v9"), "protocol="),
        (lambda: hs.MCPServer.http("http://x/mcp", name="ok", max_connections=0), "positive"),
    ],
)
def test_bad_arguments_are_refused_when_the_server_is_made(make: Any, problem: str) -> None:
    with pytest.raises(InvalidRequestError, match=problem):
        make()


async def test_context_for_a_server_that_declares_none_is_refused(
    stdio_server: hs.MCPServer,
) -> None:
    with pytest.raises(InvalidRequestError, match="takes no per-request credentials"):
        await stdio_server.tools(context={"headers": {"Authorization": "x"}})
