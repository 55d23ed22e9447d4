"""A real MCP server over streamable HTTP and SSE on 127.0.0.1, through litellm (loopback)."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.errors import ToolContextError, ToolProviderAuthError, ToolProviderError
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import HttpServer, State, start_http, stop, wait_for

ALICE, BOB = "tok-alice-5f9c2e71", "tok-bob-0d4a8b33"


async def call(
    loopback: LoopbackServer, tools: list[hs.Tool], name: str, args: Any, **kw: Any
) -> Any:
    loopback.script(tool_calls((name, args)), text("ok"))
    result = hs.stream_text(prompt="go", tools=tools, **loopback.llm(), **kw)
    chunks = [c async for c in result]
    done = [c for c in chunks if c.type in ("tool-output-available", "tool-output-error")]
    assert len(done) == 1, chunks
    return done[0].output if done[0].type == "tool-output-available" else done[0].error_text


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_tools_over_http_are_listed_and_called(
    http_server: HttpServer, loopback: LoopbackServer, state: State, transport: Any
) -> None:
    url = http_server.url if transport == "streamable-http" else http_server.sse_url
    async with hs.MCPServer.http(url, name="remote", transport=transport) as server:
        tools = await server.tools()
        assert "remote__forecast" in [t.name for t in tools]
        output = await call(loopback, tools, "remote__forecast", {"city": "Oslo"})
    assert output == {"city": "Oslo", "temp_c": 21, "sky": "sunny"}
    assert state.lines("calls") == ["forecast"]


async def test_a_cancelled_run_closes_the_request_and_the_server_sees_it(
    http_server: HttpServer, loopback: LoopbackServer, state: State
) -> None:
    async with hs.MCPServer.http(http_server.url, name="remote") as server:
        loopback.script(tool_calls(("remote__slow", {"seconds": 30})))
        run = hs.stream_text(prompt="go", tools=await server.tools(), **loopback.llm())
        consumer = asyncio.ensure_future(run.consume())
        await wait_for(lambda: state.lines("calls") == ["slow"])
        consumer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await consumer
        await wait_for(lambda: len(state.lines("cancelled")) == 1)


def exporter_and_settings(**kw: Any) -> tuple[Any, hs.TelemetrySettings]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, hs.TelemetrySettings(tracer_provider=provider, **kw)


def spans_json(exporter: Any) -> str:
    return "".join(span.to_json() for span in exporter.get_finished_spans())


async def test_per_request_headers_reach_the_server_and_nothing_else(
    state: State, loopback: LoopbackServer, tmp_path: Path
) -> None:
    exporter, telemetry = exporter_and_settings(record_inputs=True, record_outputs=True)
    server_process = start_http(state, tokens=f"{ALICE}=alice,{BOB}=bob")
    executor = hs.Executor(store=hs.SQLiteStore(str(tmp_path / "log.db")))
    try:
        server = hs.MCPServer.http(
            server_process.url, name="acct", request_headers={"Authorization"}, protocol="legacy"
        )
        async with server:
            alice = {"headers": {"Authorization": f"Bearer {ALICE}"}}
            agent = hs.Agent(
                name="support",
                model="openai/loopback",
                tools=await server.tools(context=alice),
                settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
            )
            answers = []
            for session, token in (("s-alice", ALICE), ("s-bob", BOB)):
                loopback.script(tool_calls(("acct__whoami", {})), text("ok"))
                context = {"acct": {"headers": {"Authorization": f"Bearer {token}"}}}
                run = executor.run(
                    agent, session, "who am I?", tools_context=context, telemetry=telemetry
                )
                chunks = [c async for c in run]
                answers += [c.output for c in chunks if c.type == "tool-output-available"]
    finally:
        stop(server_process.process)
    assert answers == [{"result": "alice"}, {"result": "bob"}]
    # One MCP session each (the listing used alice's too): credential sets never share one.
    assert len(set(state.lines("sessions"))) == 2
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("log.db*"))
    for where in (b"".join(loopback.requests), stored, spans_json(exporter).encode()):
        assert ALICE.encode() not in where and BOB.encode() not in where
    assert b"acct__whoami" in stored  # the log is there, only without the tokens
    assert "execute_tool acct__whoami" in spans_json(exporter)


async def test_a_refusal_is_a_typed_error_with_the_challenge_and_no_credential(
    state: State, loopback: LoopbackServer
) -> None:
    server_process = start_http(state, tokens=f"{ALICE}=alice")
    try:
        server = hs.MCPServer.http(
            server_process.url,
            headers={"Authorization": "Bearer wrong-static-token-77"},
            name="acct",
            request_headers={"Authorization"},
        )
        async with server:
            with pytest.raises(ToolProviderAuthError) as refused:
                await server.tools()
            tools = await server.tools(context={"headers": {"Authorization": f"Bearer {ALICE}"}})
            stale = {"acct": {"headers": {"Authorization": "Bearer revoked-token-9911"}}}
            error = await call(loopback, tools, "acct__whoami", {}, tools_context=stale)
    finally:
        stop(server_process.process)
    assert refused.value.status == 401
    assert refused.value.challenge and "resource_metadata" in refused.value.challenge
    assert "'acct'" in refused.value.message and "refused the credentials" in refused.value.message
    assert "wrong-static-token" not in refused.value.message
    assert "ToolProviderAuthError" in error and "revoked-token" not in error
    assert b"revoked-token" not in b"".join(loopback.requests)


async def test_an_undeclared_header_is_refused_before_any_request(
    http_server: HttpServer, loopback: LoopbackServer
) -> None:
    async with hs.MCPServer.http(
        http_server.url, name="acct", request_headers={"Authorization"}
    ) as server:
        tools = await server.tools()
        bad = {"acct": {"headers": {"Cookie": "session=secret-cookie-1"}}}
        with pytest.raises(ToolContextError, match=r"\['Cookie'\] may not be set") as caught:
            await call(loopback, tools, "acct__whoami", {}, tools_context=bad)
    assert "secret-cookie" not in str(caught.value)
    assert loopback.requests == []


async def test_an_unreachable_server_names_itself_and_what_to_check() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://user:pw-secret@127.0.0.1:{port}/mcp?key=query-secret"
    async with hs.MCPServer.http(url, name="gone") as server:
        with pytest.raises(ToolProviderError) as caught:
            await server.tools()
    message = caught.value.message
    assert f"MCP server 'gone' at http://127.0.0.1:{port}/mcp" in message
    assert "Check the URL and that the server is running" in message
    assert "secret" not in message
    assert (caught.value.code, caught.value.retryable) == ("tool_provider_unavailable", True)


async def test_a_killed_http_server_fails_its_calls_as_error_results(
    state: State, loopback: LoopbackServer
) -> None:
    server_process = start_http(state)
    async with hs.MCPServer.http(server_process.url, name="remote") as server:
        tools = await server.tools()
        stop(server_process.process)
        error = await call(loopback, tools, "remote__echo", {"text": "hello?"})
    assert "ToolProviderError" in error and "MCP server 'remote'" in error


async def test_a_legacy_session_id_reaches_the_server_and_telemetry_hashes_it(
    http_server: HttpServer, loopback: LoopbackServer, state: State
) -> None:
    import hashlib

    exporter, telemetry = exporter_and_settings()
    async with hs.MCPServer.http(http_server.url, name="remote", protocol="legacy") as server:
        await call(loopback, await server.tools(), "remote__whoami", {}, telemetry=telemetry)
    (session,) = set(state.lines("sessions"))
    span = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool remote__whoami")
    attrs = dict(span.attributes or {})
    assert attrs["mcp.session.id"] == hashlib.sha256(session.encode()).hexdigest()[:32]
    assert attrs["mcp.protocol.version"] == "2025-11-25"
    assert (attrs["network.transport"], attrs["network.protocol.name"]) == ("tcp", "http")
    assert (attrs["server.address"], attrs["server.port"]) == (
        "127.0.0.1",
        int(http_server.base.rsplit(":", 1)[1]),
    )
    assert session not in spans_json(exporter)


async def test_a_stored_offer_still_builds_its_tools_while_the_server_is_down(
    state: State, loopback: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    server_process = start_http(state)
    async with hs.MCPServer.http(server_process.url, name="remote") as server:
        offer = await server.offer()
        stop(server_process.process)
        with caplog.at_level("WARNING", logger="helix_stream.mcp"):
            tools = await server.tools(offer)  # the turn goes on, byte for byte
        assert [t.name for t in tools] == list(offer.names())
        error = await call(loopback, tools, "remote__echo", {"text": "hello?"})
        with pytest.raises(ToolProviderError, match="could not be reached"):
            await server.tools()  # without an offer, the typed error
    assert "ToolProviderError" in error and "MCP server 'remote'" in error
    assert "offering the stored tools" in caplog.text
