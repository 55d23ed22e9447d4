"""What ``Agent(tools=[..., server])`` checks, and what a session of it refuses before writing:
a server's missing credentials, a name clash, a telemetry filter; and an MCP tool that waits
for approval, settled in the next run."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.errors import InvalidRequestError, SessionNotFoundError, ToolContextError
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import State, stdio_args
from .test_session import lookup, make_agent, settled


def server_of(stdio_env: dict[str, str], name: str = "demo", **kw: Any) -> hs.MCPServer:
    return hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name=name, **kw)


def test_an_agent_takes_servers_in_its_tools_list_and_checks_them(
    stdio_env: dict[str, str],
) -> None:
    one, two = server_of(stdio_env), server_of(stdio_env, name="other")
    agent = hs.Agent(name="a", tools=[lookup, one, two])
    assert agent.servers == (one, two)
    assert list(agent.tool_map) == ["lookup"]  # a server's tools come with a session's offer
    with pytest.raises(TypeError, match=r"hs\.MCPServer"):
        hs.Agent(name="a", tools=[lookup, object()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="two MCP servers are named 'demo'"):
        hs.Agent(name="a", tools=[one, server_of(stdio_env)])


async def refused(executor: hs.Executor, agent: hs.Agent, **kw: Any) -> BaseException:
    run = executor.run(agent, "s1", "hi", **kw)
    await run.consume()
    assert run.error is not None
    assert await executor.store.get_session("s1") is None  # nothing was written
    return run.error


async def test_a_first_turn_is_refused_before_writing_for_what_its_servers_cannot_do(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    secret = server_of(stdio_env, name="env", request_env={"HELIX_TEST_TOKEN"})
    clash = hs.tool(name="demo__echo", input_schema=lookup.input_schema, execute=lambda i: "x")
    typo = hs.TelemetrySettings(include_tools_context={"dmeo": {"env": True}})
    try:
        missing = await refused(executor, make_agent(loopback, secret))
        assert state.lines("starts") == []  # refused before the server was started
        named = await refused(executor, make_agent(loopback, clash, server_of(stdio_env)))
        filtered = await refused(
            executor, make_agent(loopback, server_of(stdio_env)), telemetry=typo
        )
    finally:
        await executor.close()
    assert isinstance(missing, ToolContextError) and "tools_context has no 'env' entry" in str(
        missing
    )
    assert isinstance(named, InvalidRequestError) and "'demo__echo'" in str(named)
    assert isinstance(filtered, InvalidRequestError) and "'dmeo'" in str(filtered)
    assert loopback.requests == []


async def test_a_telemetry_filter_may_name_an_agent_owned_server(
    stdio_env: dict[str, str], loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    telemetry = hs.TelemetrySettings(include_tools_context={"demo": {"env": True}})
    agent = make_agent(loopback, server_of(stdio_env))
    loopback.script(text("hi"))
    try:
        run = executor.run(agent, "s1", "hi", telemetry=telemetry)
        await run.consume()
    finally:
        await executor.close()
    assert run.error is None


async def test_an_mcp_call_waiting_for_approval_runs_once_approved(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    agent = make_agent(loopback, server_of(stdio_env, needs_approval={"echo"}))
    try:
        loopback.script(tool_calls(("demo__echo", {"text": "approved"})))
        paused = [c async for c in executor.run(agent, "s1", "echo it")]
        (request,) = [c for c in paused if c.type == "tool-approval-request"]
        assert (await executor.session("s1")).status == "paused"
        assert state.lines("calls") == []
        await executor.respond_to_approval("s1", request.approval_id, True)
        loopback.script(text("done"))
        resumed = [c async for c in executor.run(agent, "s1")]
    finally:
        await executor.close()
    assert settled(resumed) == [("output", {"result": "approved"})]
    assert state.lines("calls") == ["echo"]


async def test_a_turn_refused_anyway_does_not_wait_for_a_server(
    loopback: LoopbackServer, tmp_path: Any
) -> None:
    broken = hs.MCPServer.stdio(str(tmp_path / "no-such-server"), name="broken")
    executor = hs.Executor(store=hs.MemoryStore())
    run = executor.run(make_agent(loopback, broken), "nowhere")  # nothing to continue
    await run.consume()
    assert isinstance(run.error, SessionNotFoundError)
