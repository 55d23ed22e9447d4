"""A server whose tool list changes between turns: the stored offer keeps the request's bytes."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.errors import InvalidRequestError
from helix_stream.mcp import MCPOffer
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import State, stdio_args, tools_bytes


def user(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


async def test_a_stored_offer_keeps_the_request_bytes_while_the_server_changes(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    state.hide("added_later")
    server = hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo")
    async with server:
        offer = await server.offer()
        stored = offer.encode()  # what a session keeps from its first turn
        assert "demo__added_later" not in offer.names()

        loopback.script(tool_calls(("demo__echo", {"text": "one"})), text("first"))
        first = await hs.generate_text(
            messages=[user("turn 1")], tools=await server.tools(offer), **loopback.llm()
        )
        assert first.steps[0].tool_results[0].status == "output"

        state.hide("echo")  # the server drops a tool and adds one
        later = await server.tools(MCPOffer.decode(stored))
        loopback.script(tool_calls(("demo__echo", {"text": "two"})), text("second"))
        history = [user("turn 1"), *first.response_messages, user("turn 2")]
        second = await hs.generate_text(messages=history, tools=later, **loopback.llm())

        fresh = {t.name for t in await server.tools()}  # a new session's offer
    result = second.steps[0].tool_results[0]
    assert (result.status, result.reason) == ("not_executed", "tool_unavailable")
    assert state.lines("calls") == ["echo"]  # the second call never reached the server
    raw = loopback.requests
    assert len(raw) == 4
    # Every request offers the same tools, byte for byte ...
    assert {tools_bytes(r) for r in raw} == {tools_bytes(raw[0])}
    assert b"demo__added_later" not in raw[3]
    # ... so each request's earlier messages are a byte prefix of the next turn's request.
    turn_one = raw[1][: raw[1].index(b'],"tools":')]
    assert raw[2].startswith(turn_one)
    assert "demo__added_later" in fresh and "demo__echo" not in fresh


async def test_an_offer_of_another_server_is_refused(
    stdio_server: hs.MCPServer,
) -> None:
    other = MCPOffer(server="other", tools=())
    with pytest.raises(InvalidRequestError, match="'other'"):
        await stdio_server.tools(other)
