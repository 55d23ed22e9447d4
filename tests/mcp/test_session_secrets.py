"""Credentials of an agent-owned MCP server through the session path: per-request headers from
``tools_context`` and a server's auth strategy reach the MCP server and nothing else — not the
model's request bytes, the stored log (SQLite's files), the span exporter or what a client
sees, a refusal included (which writes nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.auth import MemoryTokenStore
from helix_stream.errors import AuthorizationRequiredError
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server._asgi import sse_data
from tests.server.conftest import chat, client, user

from .conftest import State, start_http, stop
from .test_http import exporter_and_settings, spans_json

ALICE, BOB, REVOKED = "tok-alice-5f9c2e71", "tok-bob-0d4a8b33", "tok-revoked-77e1a0c2"
TOKENS = {"alice": ALICE, "bob": BOB, "mallory": REVOKED}


def agent_with(loopback: LoopbackServer, server: hs.MCPServer) -> hs.Agent:
    return hs.Agent(
        name="support",
        model="openai/loopback",
        tools=[server],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )


def stored_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.glob("log.db*"))


def errors(raw: bytes) -> list[str]:
    return [
        c["errorText"]
        for c in sse_data(raw)
        if isinstance(c, dict) and c["type"] == "tool-output-error"
    ]


def outputs(raw: bytes) -> list[Any]:
    return [
        c["output"]
        for c in sse_data(raw)
        if isinstance(c, dict) and c["type"] == "tool-output-available"
    ]


async def test_per_request_headers_reach_only_the_server_through_the_chat_server(
    state: State, loopback: LoopbackServer, tmp_path: Path
) -> None:
    exporter, telemetry = exporter_and_settings(record_inputs=True, record_outputs=True)
    process = start_http(state, tokens=f"{ALICE}=alice,{BOB}=bob")
    store = hs.SQLiteStore(str(tmp_path / "log.db"))
    executor = hs.Executor(store=store, telemetry=telemetry)
    server = hs.MCPServer.http(
        process.url, name="acct", request_headers={"Authorization"}, protocol="legacy"
    )

    def headers(request: Any, auth: Any) -> dict[str, Any]:
        bearer = {"headers": {"Authorization": f"Bearer {TOKENS[auth]}"}}
        return {"tools_context": {"acct": bearer}}

    app = create_app(
        executor,
        agent_with(loopback, server),
        authenticate=lambda request: request.headers["x-user"],
        run_options=headers,
    )
    bodies: list[bytes] = []
    try:
        async with app.router.lifespan_context(app), client(app) as http:
            for sid, who in (("s-alice", "alice"), ("s-bob", "bob")):
                loopback.script(tool_calls(("acct__whoami", {})), text("ok"))
                answer = await http.post(
                    "/api/chat", json=chat(sid, user("who?")), headers={"x-user": who}
                )
                bodies.append(answer.content)
            # A caller whose token the server refuses, on a session with a stored offer: the
            # turn does not list the server (its tools come from the offer), so the refusal
            # comes at the call, as the call's error result.
            loopback.script(tool_calls(("acct__whoami", {})), text("ok"))
            refused = await http.post(
                "/api/chat",
                json=chat("s-alice", user("again", id="u2")),
                headers={"x-user": "mallory"},
            )
            bodies.append(refused.content)
    finally:
        stop(process.process)
    assert [outputs(b) for b in bodies[:2]] == [[{"result": "alice"}], [{"result": "bob"}]]
    assert refused.status_code == 200
    assert errors(refused.content) == ["An error occurred."]  # masked for the client
    assert b"Tool 'acct__whoami' failed: ToolProviderAuthError" in stored_bytes(tmp_path)
    assert len(set(state.lines("sessions"))) == 2  # one MCP session per credential set
    where = [
        b"".join(loopback.requests),
        stored_bytes(tmp_path),
        spans_json(exporter).encode(),
        *bodies,
    ]
    for token in (ALICE, BOB, REVOKED):
        assert all(token.encode() not in w for w in where), token
    assert b"acct__whoami" in stored_bytes(tmp_path) and b"execute_tool acct__whoami" in where[2]


async def test_a_server_with_token_auth_lists_and_calls_with_the_callers_token(
    state: State, loopback: LoopbackServer, tmp_path: Path
) -> None:
    exporter, telemetry = exporter_and_settings(record_inputs=True, record_outputs=True)
    process = start_http(state, tokens=f"{ALICE}=alice,{BOB}=bob")
    asked: list[Any] = []

    def get_token(request: hs.TokenRequest) -> hs.Token:
        asked.append(request.principal)
        return hs.Token(token=TOKENS[request.principal])

    strategy = hs.token_auth(get_token, name="acct-token")
    server = hs.MCPServer.http(process.url, name="acct", auth=strategy)
    store = hs.SQLiteStore(str(tmp_path / "log.db"))
    executor = hs.Executor(store=store, telemetry=telemetry)
    agent = agent_with(loopback, server)
    tokens = MemoryTokenStore()
    seen: list[Any] = []
    try:
        for sid, who in (("s-alice", "alice"), ("s-bob", "bob"), ("s-alice", "alice")):
            loopback.script(tool_calls(("acct__whoami", {})), text("ok"))
            run = executor.run(agent, sid, "who?", auth=who, token_store=tokens)
            seen += [c.output for c in [c async for c in run] if c.type == "tool-output-available"]
        served = {"acct": await server.tools(token=hs.Token(token=ALICE))}
        tool = agent.tools_with(served)["acct__whoami"]
        assert tool.auth is strategy  # a tool with auth=, as any: the session's sign-in applies
        refused = executor.run(agent, "s-mallory", "who?", auth="mallory", token_store=tokens)
        await refused.consume()
    finally:
        await executor.close()
        stop(process.process)
    assert seen == [{"result": "alice"}, {"result": "bob"}, {"result": "alice"}]
    assert asked == ["alice", "bob", "mallory"]  # each caller's token resolved once, then kept
    assert refused.error is not None and "refused the credentials" in str(refused.error)
    assert await store.get_session("s-mallory") is None  # refused before anything was written
    assert await tokens.get("acct-token", 'principal:"mallory"') is None  # the refused token left
    where = [b"".join(loopback.requests), stored_bytes(tmp_path), spans_json(exporter).encode()]
    for token in (ALICE, BOB, REVOKED):
        assert all(token.encode() not in w for w in where), token
    assert REVOKED not in str(refused.error)


async def test_a_token_the_server_refuses_at_a_call_is_rejected_as_by_ctx_reject_token(
    state: State, loopback: LoopbackServer
) -> None:
    process = start_http(state, tokens=f"{ALICE}=alice")
    strategy = hs.token_auth(lambda request: hs.Token(token=REVOKED), name="acct-revoked")
    tokens = MemoryTokenStore()
    try:
        async with hs.MCPServer.http(process.url, name="acct", auth=strategy) as server:
            tools = await server.tools(token=hs.Token(token=ALICE))  # listed while it was valid
            loopback.script(tool_calls(("acct__whoami", {})), text("ok"))
            result = hs.stream_text(
                prompt="who?", tools=tools, token_store=tokens, **loopback.llm()
            )
            chunks = [c async for c in result]
    finally:
        stop(process.process)
    (error,) = [c.error_text for c in chunks if c.type == "tool-output-error"]
    assert "TokenRejectedError" in error and "refused its token for 'acct-revoked'" in error
    assert REVOKED not in error and REVOKED.encode() not in b"".join(loopback.requests)
    assert await tokens.get("acct-revoked", "app") is None  # out of the token store


async def test_an_interactive_server_without_a_sign_in_refuses_the_first_turn(
    state: State, loopback: LoopbackServer
) -> None:
    process = start_http(state, tokens=f"{ALICE}=alice")
    strategy = hs.oauth_auth(
        name="acct-oauth",
        authorize_url="http://127.0.0.1:9/authorize",
        token_url="http://127.0.0.1:9/token",
        client_id="helix",
        redirect_uri="http://127.0.0.1:9/api/auth/callback",
    )
    executor = hs.Executor(store=hs.MemoryStore())
    agent = agent_with(loopback, hs.MCPServer.http(process.url, name="acct", auth=strategy))
    try:
        with pytest.raises(AuthorizationRequiredError) as caught:
            await executor.start(agent, "s1", "who?", auth="alice")
    finally:
        await executor.close()
        stop(process.process)
    assert caught.value.strategy == "acct-oauth"
    assert await executor.store.get_session("s1") is None
    assert loopback.requests == [] and state.lines("calls") == []
