"""A real MCP server over stdio, its tools called through ``stream_text`` and litellm (loopback)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.errors import InvalidRequestError, ToolContextError
from helix_stream.mcp._tool import needs_approval
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import State, stdio_args, wait_for


def tool_messages(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


async def run(loopback: LoopbackServer, tools: list[hs.Tool], **kw: Any) -> list[Any]:
    result = hs.stream_text(prompt="go", tools=tools, **loopback.llm(), **kw)
    return [chunk async for chunk in result]


async def test_tools_are_listed_with_the_servers_schemas_and_prefixed_names(
    stdio_server: hs.MCPServer, loopback: LoopbackServer
) -> None:
    tools = await stdio_server.tools()
    names = [t.name for t in tools]
    assert names == sorted(names)
    assert {"demo__echo", "demo__forecast", "demo__notes_read", "demo__slow"} <= set(names)
    await run(loopback, tools)
    sent = {t["function"]["name"]: t["function"] for t in loopback.bodies()[0]["tools"]}
    assert sent["demo__echo"]["description"] == "Say the text back."
    assert sent["demo__echo"]["parameters"] == {
        "type": "object",
        "properties": {"text": {"title": "Text", "type": "string"}},
        "required": ["text"],
    }


async def test_calls_reach_the_server_by_its_own_names_and_results_map_to_outputs(
    stdio_server: hs.MCPServer, loopback: LoopbackServer, state: State
) -> None:
    loopback.script(
        tool_calls(
            ("demo__forecast", {"city": "Paris"}),
            ("demo__echo", {"text": "hi there"}),
            ("demo__notes_read", {"title": "mcp"}),
            ("demo__report", {}),
        ),
        text("done"),
    )
    chunks = await run(loopback, await stdio_server.tools())
    outputs = {c.tool_call_id: c.output for c in chunks if c.type == "tool-output-available"}
    assert outputs == {
        "call_0_demo__forecast": {"city": "Paris", "temp_c": 21, "sky": "sunny"},
        "call_1_demo__echo": {"result": "hi there"},  # the server's structuredContent
        "call_2_demo__notes_read": {"result": "notes about mcp"},
        "call_3_demo__report": [  # a text resource is text: its URI, then its text
            {"type": "text", "text": "summary"},
            {"type": "text", "text": "file:///report.txt\nall good"},
        ],
    }
    assert sorted(state.lines("calls")) == ["echo", "forecast", "notes.read", "report"]
    sent = tool_messages(loopback.bodies()[1])
    assert json.loads(sent["call_0_demo__forecast"]) == {
        "city": "Paris",
        "temp_c": 21,
        "sky": "sunny",
    }
    assert sent["call_3_demo__report"] == "summary\nfile:///report.txt\nall good"


async def test_is_error_and_invalid_input_are_error_results_the_model_reads(
    stdio_server: hs.MCPServer, loopback: LoopbackServer, state: State
) -> None:
    loopback.script(
        tool_calls(("demo__fail", {"reason": "the disk is full"}), ("demo__echo", {"txt": 1})),
        text("sorry"),
    )
    chunks = await run(loopback, await stdio_server.tools())
    errors = {c.tool_call_id: c.error_text for c in chunks if c.type == "tool-output-error"}
    assert "the disk is full" in errors["call_0_demo__fail"]
    assert errors["call_1_demo__echo"] == (
        "Invalid input for tool 'demo__echo': (root): 'text' is a required property"
    )
    sent = tool_messages(loopback.bodies()[1])
    assert (
        "ToolFailedError" in sent["call_0_demo__fail"]
        and "the disk is full" in sent["call_0_demo__fail"]
    )
    assert sent["call_1_demo__echo"] == errors["call_1_demo__echo"]
    assert state.lines("calls") == ["fail"]  # invalid input never reached the server
    assert chunks[-1].type == "finish"


async def test_a_run_whose_client_left_cancels_the_call_on_the_server(
    stdio_server: hs.MCPServer, loopback: LoopbackServer, state: State
) -> None:
    loopback.script(tool_calls(("demo__slow", {"seconds": 30})))
    # A server's request task is cancelled when its client disconnects: the same here.
    consumer = asyncio.ensure_future(run(loopback, await stdio_server.tools()))
    await wait_for(lambda: state.lines("calls") == ["slow"])
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    await wait_for(lambda: len(state.lines("cancelled")) == 1)
    # The connection is still good for the next call.
    loopback.script(tool_calls(("demo__echo", {"text": "still here"})), text("ok"))
    chunks = await run(loopback, await stdio_server.tools())
    assert any(c.type == "tool-output-available" for c in chunks)


async def test_a_timed_out_run_cancels_the_call_on_the_server(
    stdio_server: hs.MCPServer, loopback: LoopbackServer, state: State
) -> None:
    loopback.script(tool_calls(("demo__slow", {"seconds": 30})))
    result = hs.stream_text(prompt="go", tools=await stdio_server.tools(), **loopback.llm())
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(result.consume(), timeout=2.0)
    await wait_for(lambda: len(state.lines("cancelled")) == 1)


async def test_a_server_killed_mid_call_is_an_error_result_and_the_next_use_reconnects(
    stdio_server: hs.MCPServer, loopback: LoopbackServer, state: State
) -> None:
    tools = await stdio_server.tools()
    loopback.script(tool_calls(("demo__pid", {})), text("ok"))
    chunks = await run(loopback, tools)
    pid = next(c.output for c in chunks if c.type == "tool-output-available")["result"]

    async def kill_once_called() -> None:
        await wait_for(lambda: "slow" in state.lines("calls"))
        os.kill(pid, signal.SIGKILL)

    loopback.script(tool_calls(("demo__slow", {"seconds": 30})), text("it broke"))
    killer = asyncio.ensure_future(kill_once_called())
    seen = await run(loopback, tools)
    await killer
    error = next(c.error_text for c in seen if c.type == "tool-output-error")
    assert "MCP server 'demo'" in error and "closed the connection during the call" in error
    assert "closed the connection" in tool_messages(loopback.bodies()[-1])["call_0_demo__slow"]
    assert seen[-1].type == "finish"

    loopback.script(tool_calls(("demo__echo", {"text": "back"})), text("ok"))
    chunks = await run(loopback, tools)  # the same tools: the server object reconnects
    assert [c.output for c in chunks if c.type == "tool-output-available"] == [{"result": "back"}]
    assert len(state.lines("starts")) == 2


async def test_a_server_that_died_between_calls_is_replaced_before_the_next_call(
    stdio_server: hs.MCPServer, loopback: LoopbackServer, state: State
) -> None:
    tools = await stdio_server.tools()
    os.kill(int(state.lines("starts")[0]), signal.SIGKILL)
    await asyncio.sleep(0.5)  # the connection sees its end of stream
    loopback.script(tool_calls(("demo__echo", {"text": "new"})), text("ok"))
    chunks = await run(loopback, tools)
    assert [c.output for c in chunks if c.type == "tool-output-available"] == [{"result": "new"}]


async def test_needs_approval_takes_a_bool_names_or_a_predicate(
    stdio_env: dict[str, str],
) -> None:
    server = hs.MCPServer.stdio(
        sys.executable, stdio_args(), env=stdio_env, name="demo",
        needs_approval=lambda spec: spec.remote_name.startswith("s"),
    )  # fmt: skip
    async with server:
        tools = await server.tools()
        offer = (await server.offer()).tools
    assert {t.name for t in tools if t.needs_approval} == {"demo__slow"}
    assert {s.name for s in offer if needs_approval(True, s)} == {t.name for t in tools}
    assert not any(needs_approval(False, s) for s in offer)
    assert {s.name for s in offer if needs_approval({"fail", "demo__echo"}, s)} == {
        "demo__fail",
        "demo__echo",
    }
    with pytest.raises(InvalidRequestError, match="needs_approval= takes"):
        hs.MCPServer.stdio(sys.executable, stdio_args(), name="demo", needs_approval="fail")


async def test_a_tool_needing_approval_pauses_without_calling_the_server(
    stdio_env: dict[str, str], loopback: LoopbackServer, state: State
) -> None:
    server = hs.MCPServer.stdio(
        sys.executable, stdio_args(), env=stdio_env, name="demo", needs_approval={"fail"}
    )
    async with server:
        loopback.script(tool_calls(("demo__fail", {"reason": "x"})))
        chunks = await run(loopback, await server.tools())
    assert [c.type for c in chunks if c.type.startswith("tool-approval")] == [
        "tool-approval-request"
    ]
    assert state.lines("calls") == []


async def test_per_request_env_starts_a_process_per_credential_set_within_the_bound(
    stdio_env: dict[str, str], loopback: LoopbackServer, state: State
) -> None:
    carol, dave = "tok-carol-81d0c3", "tok-dave-4be917"
    server = hs.MCPServer.stdio(
        sys.executable, stdio_args(), env={**stdio_env, "HELIX_MCP_TOKENS": f"{carol}=carol,{dave}=dave"},
        name="demo", request_env={"HELIX_TEST_TOKEN"}, max_connections=1,
    )  # fmt: skip

    async def whoami(token: str) -> Any:
        loopback.script(tool_calls(("demo__whoami", {})), text("ok"))
        context = {"demo": {"env": {"HELIX_TEST_TOKEN": token}}}
        chunks = await run(loopback, tools, tools_context=context)
        return next(c.output for c in chunks if c.type == "tool-output-available")

    async with server:
        tools = await server.tools()  # listed on the connection without credentials
        assert await whoami(carol) == {"result": "carol"}
        assert await whoami(dave) == {"result": "dave"}
        assert await whoami(carol) == {"result": "carol"}  # dave's evicted carol's
    assert len(state.lines("starts")) == 4
    sent = b"".join(loopback.requests)
    assert carol.encode() not in sent and dave.encode() not in sent


async def test_per_request_credentials_are_validated_before_anything_is_sent(
    stdio_env: dict[str, str], loopback: LoopbackServer
) -> None:
    server = hs.MCPServer.stdio(
        sys.executable, stdio_args(), env=stdio_env, name="demo", request_env={"HELIX_TEST_TOKEN"}
    )
    async with server:
        tools = await server.tools()
        with pytest.raises(ToolContextError, match="tools_context has no 'demo' entry"):
            await run(loopback, tools)
        bad = {"demo": {"env": {"PATH": "/tmp/evil-path-value"}}}
        with pytest.raises(ToolContextError, match=r"\['PATH'\] may not be set") as caught:
            await run(loopback, tools, tools_context=bad)
        assert "evil-path-value" not in str(caught.value)
        with pytest.raises(ToolContextError, match="invalid"):
            await server.tools(context={"env": {"PATH": "x"}})
    assert loopback.requests == []


async def test_a_closed_server_connects_again_when_used(
    stdio_server: hs.MCPServer, state: State
) -> None:
    await stdio_server.tools()
    await stdio_server.aclose()
    assert len(await stdio_server.tools()) > 3
    assert len(state.lines("starts")) == 2
