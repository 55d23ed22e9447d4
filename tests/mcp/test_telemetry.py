"""MCP calls on the ``execute_tool`` span: the MCP semconv attributes and the context filters."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.errors import InvalidRequestError
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import stdio_args
from .test_http import exporter_and_settings, spans_json


def tool_span(exporter: Any, name: str) -> dict[str, Any]:
    span = next(s for s in exporter.get_finished_spans() if s.name == f"execute_tool {name}")
    return dict(span.attributes or {})


async def test_each_call_is_an_execute_tool_span_with_the_mcp_attributes(
    stdio_server: hs.MCPServer, loopback: LoopbackServer
) -> None:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    exporter, telemetry = exporter_and_settings()
    loopback.script(
        tool_calls(("demo__notes_read", {"title": "x"}), ("demo__fail", {"reason": "no"})),
        text("ok"),
    )
    result = hs.stream_text(
        prompt="go", tools=await stdio_server.tools(), telemetry=telemetry, **loopback.llm()
    )
    await result.consume()
    ok = tool_span(exporter, "demo__notes_read")
    assert ok["gen_ai.operation.name"] == "execute_tool"
    assert ok["mcp.method.name"] == "tools/call"
    assert ok["network.transport"] == "pipe"
    assert ok["mcp.protocol.version"] in MODERN_PROTOCOL_VERSIONS
    assert (ok["helix.mcp.server.name"], ok["helix.mcp.tool.name"]) == ("demo", "notes.read")
    assert "server.address" not in ok and "mcp.session.id" not in ok  # stdio has neither
    assert "error.type" not in ok
    failed = tool_span(exporter, "demo__fail")
    assert failed["error.type"] == "tool_error"  # semconv: a CallToolResult with isError
    assert failed["helix.tool.status"] == "error"


async def test_the_context_filter_may_name_the_server_and_keeps_credentials_out(
    stdio_env: dict[str, str], loopback: LoopbackServer
) -> None:
    secret = "env-secret-value-4471"
    server = hs.MCPServer.stdio(
        sys.executable, stdio_args(), env=stdio_env, name="demo", request_env={"HELIX_TEST_TOKEN"}
    )
    context = {"demo": {"env": {"HELIX_TEST_TOKEN": secret}}}
    async with server:
        tools = await server.tools()
        with pytest.raises(InvalidRequestError, match="'nope'"):
            hs.stream_text(
                prompt="go", tools=tools, tools_context=context, **loopback.llm(),
                telemetry=hs.TelemetrySettings(include_tools_context={"nope": {"env": True}}),
            )  # fmt: skip
        exporter, telemetry = exporter_and_settings(
            include_tools_context={"demo": {"env": False}}, record_inputs=True
        )
        loopback.script(tool_calls(("demo__echo", {"text": "hi"})), text("ok"))
        result = hs.stream_text(
            prompt="go", tools=tools, tools_context=context, telemetry=telemetry, **loopback.llm()
        )
        await result.consume()
    assert tool_span(exporter, "demo__echo")["mcp.method.name"] == "tools/call"
    assert secret not in spans_json(exporter)
    assert secret.encode() not in b"".join(loopback.requests)


async def test_the_trace_context_reaches_the_server_in_the_requests_meta(
    stdio_server: hs.MCPServer, loopback: LoopbackServer, state: Any
) -> None:
    exporter, telemetry = exporter_and_settings()
    loopback.script(tool_calls(("demo__whoami", {})), text("ok"))
    result = hs.stream_text(
        prompt="go", tools=await stdio_server.tools(), telemetry=telemetry, **loopback.llm()
    )
    await result.consume()
    span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool demo__whoami")
    (traceparent,) = state.lines("traces")
    assert traceparent.split("-")[1] == f"{span.context.trace_id:032x}"
