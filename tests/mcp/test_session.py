"""``Agent(tools=[..., server])`` through ``Executor.run``: the agent owns the server, and each
session offers what the server listed at its first turn, byte for byte, while it changes."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.errors import InvalidRequestError, SessionNotFoundError, ToolProviderError
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import State, stdio_args, tools_bytes, wait_for


@hs.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


@hs.tool
def note(text: str) -> str:
    """Take a note."""
    return "noted"


def make_agent(loopback: LoopbackServer, *tools: Any, name: str = "support") -> hs.Agent:
    return hs.Agent(
        name=name,
        model="openai/loopback",
        tools=list(tools),
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )


def demo_server(stdio_env: dict[str, str], **kw: Any) -> hs.MCPServer:
    return hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo", **kw)


async def turn(
    executor: hs.Executor, agent: hs.Agent, sid: str, prompt: str, **kw: Any
) -> list[Any]:
    run = executor.run(agent, sid, prompt, **kw)
    chunks = [c async for c in run]
    errors = [c for c in chunks if c.type == "error"]
    assert not errors, errors
    return chunks


def settled(chunks: list[Any]) -> list[tuple[str, Any]]:
    """Each call's outcome: ("output", value), ("error", text) or ("not_executed", reason)."""
    out: list[tuple[str, Any]] = []
    for c in chunks:
        if c.type == "tool-output-available":
            out.append(("output", c.output))
        elif c.type == "tool-output-error":
            out.append(("error", c.error_text))
        elif c.type == "tool-not-executed":
            out.append(("not_executed", c.reason))
    return out


def offered_names(raw: bytes) -> list[str]:
    return [t["function"]["name"] for t in json.loads(tools_bytes(raw))]


async def test_a_session_keeps_its_first_offer_while_the_server_changes_its_list(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    state.hide("added_later")
    server = demo_server(stdio_env)
    agent = make_agent(loopback, lookup, server, note)
    executor = hs.Executor(store=hs.MemoryStore())
    try:
        loopback.script(tool_calls(("demo__echo", {"text": "one"})), text("first"))
        first = await turn(executor, agent, "s1", "turn 1")
        state.hide("echo")  # the server drops a tool and adds one
        loopback.script(tool_calls(("demo__echo", {"text": "two"})), text("second"))
        second = await turn(executor, agent, "s1", "turn 2")
        await executor.add_context("s1", [hs.disable_tools(["demo__forecast"])])
        loopback.script(tool_calls(("demo__forecast", {"city": "Oslo"})), text("third"))
        third = await turn(executor, agent, "s1", "turn 3")
        await executor.add_context("s1", [hs.enable_tools(["demo__forecast"])])
        loopback.script(tool_calls(("demo__forecast", {"city": "Oslo"})), text("fourth"))
        fourth = await turn(executor, agent, "s1", "turn 4")
        loopback.script(text("fresh"))
        await turn(executor, agent, "s2", "a new session")  # offered what the server lists now
    finally:
        await executor.close()
    assert settled(first) == [("output", {"result": "one"})]
    assert settled(second) == [("not_executed", "tool_unavailable")]
    assert settled(third) == [("not_executed", "tool_inactive")]
    assert settled(fourth) == [("output", {"city": "Oslo", "temp_c": 21, "sky": "sunny"})]
    assert state.lines("calls") == ["echo", "forecast"]  # nothing else reached the server
    raw = loopback.requests
    assert len(raw) == 9
    session_one, session_two = raw[:8], raw[8]
    # Every request of the session offers the same tools, byte for byte, in Agent.tools order:
    assert {tools_bytes(r) for r in session_one} == {tools_bytes(raw[0])}
    names = offered_names(raw[0])
    assert names[0] == "lookup" and names[-1] == "note"
    assert names[1:-1] == sorted(names[1:-1]) and "demo__echo" in names
    assert "demo__added_later" not in names
    # ... so each request's earlier content is a byte prefix of the next one's.
    for before, after in itertools.pairwise(session_one):
        assert after.startswith(before[: before.index(b'],"tools":')]), "prefix changed"
    fresh = offered_names(session_two)
    assert "demo__added_later" in fresh and "demo__echo" not in fresh
    meta = (await executor.store.get_session("s1")).meta  # type: ignore[union-attr]
    assert "demo__added_later" not in meta["helix.mcp.demo"]
    assert "demo__echo" in meta["helix.mcp.demo"]


async def test_the_offer_is_written_with_the_turns_first_write(
    stdio_env: dict[str, str], loopback: LoopbackServer, tmp_path: Path
) -> None:
    store = hs.SQLiteStore(str(tmp_path / "s.db"))
    executor = hs.Executor(store=store)
    agent = make_agent(loopback, demo_server(stdio_env))
    try:
        loopback.script(text("hello"))
        chunks: list[Any] = []
        async for chunk in executor.run(agent, "s1", "hi"):
            chunks.append(chunk)
            if chunk.type == "start":  # the claim is written before the first chunk
                session = await store.get_session("s1")
                assert session is not None and session.status == "running"
                assert "demo__echo" in session.meta["helix.mcp.demo"]
    finally:
        await executor.close()
    assert chunks[-1].type == "finish"


async def test_a_server_that_cannot_start_refuses_the_first_turn_and_writes_nothing(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    broken = hs.MCPServer.stdio(str(tmp_path / "no-such-server"), name="broken")
    agent = make_agent(loopback, broken)
    executor = hs.Executor(store=hs.MemoryStore())
    with pytest.raises(ToolProviderError) as caught:
        await executor.start(agent, "s1", "hi")
    run = executor.run(agent, "s1", "hi")
    await run.consume()
    assert isinstance(run.error, ToolProviderError)
    assert "MCP server 'broken'" in caught.value.message
    assert "Check the command" in caught.value.message
    assert await executor.store.get_session("s1") is None
    assert loopback.requests == []


async def test_executor_close_lets_the_server_go_and_the_next_turn_connects_again(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    server = demo_server(stdio_env)
    agent = make_agent(loopback, server)
    other = make_agent(loopback, server, name="other")  # one server, two agents, two sessions
    executor = hs.Executor(store=hs.MemoryStore())
    loopback.script(
        tool_calls(("demo__pid", {})), text("a"), tool_calls(("demo__pid", {})), text("b")
    )
    one = await turn(executor, agent, "s1", "pid?")
    two = await turn(executor, other, "s2", "pid?")
    assert settled(one) == settled(two)  # one connection (one process) for both sessions
    assert len(state.lines("starts")) == 1
    first_pid = settled(one)[0][1]
    await executor.close()
    await wait_for(lambda: not _alive(int(first_pid["result"])))
    loopback.script(tool_calls(("demo__pid", {})), text("c"))
    three = await turn(executor, agent, "s1", "and now?")
    await executor.close()
    assert settled(three)[0][1] != first_pid
    assert len(state.lines("starts")) == 2


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_server_killed_mid_session_fails_the_call_and_the_next_turn_reconnects(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    agent = make_agent(loopback, demo_server(stdio_env))
    executor = hs.Executor(store=hs.MemoryStore())
    try:
        loopback.script(tool_calls(("demo__pid", {})), text("a"))
        ((_, pid),) = settled(await turn(executor, agent, "s1", "pid?"))
        loopback.script(tool_calls(("demo__slow", {"seconds": 30})), text("it broke"))
        running = asyncio.ensure_future(turn(executor, agent, "s1", "slow"))
        await wait_for(lambda: state.lines("calls")[-1:] == ["slow"])
        os.kill(int(pid["result"]), signal.SIGKILL)
        broken = await asyncio.wait_for(running, 20)
        loopback.script(tool_calls(("demo__pid", {})), text("back"))
        ((_, again),) = settled(await turn(executor, agent, "s1", "pid again?"))
    finally:
        await executor.close()
    ((outcome, error),) = settled(broken)
    assert outcome == "error" and "MCP server 'demo'" in error and "outcome is unknown" in error
    assert "it broke" in "".join(c.delta for c in broken if c.type == "text-delta")
    assert again != pid and len(state.lines("starts")) == 2


async def test_refresh_tools_takes_a_new_offer_which_changes_the_request_once(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    state.hide("added_later")
    server = demo_server(stdio_env)
    agent = make_agent(loopback, server)
    executor = hs.Executor(store=hs.MemoryStore())
    try:
        with pytest.raises(SessionNotFoundError):
            await executor.refresh_tools("s1", agent)
        for prompt in ("one", "two"):
            loopback.script(text(prompt))
            await turn(executor, agent, "s1", prompt)
        state.hide("echo")
        names = await executor.refresh_tools("s1")  # the servers this executor ran
        for prompt in ("three", "four"):
            loopback.script(tool_calls(("demo__added_later", {"text": prompt})), text(prompt))
            outcomes = settled(await turn(executor, agent, "s1", prompt))
            assert outcomes == [("output", {"result": prompt.upper()})]
        fresh = hs.Executor(store=executor.store)  # it never ran the agent
        with pytest.raises(InvalidRequestError, match="pass the agent"):
            await fresh.refresh_tools("s1")
    finally:
        await executor.close()
    assert "demo__added_later" in names["demo"] and "demo__echo" not in names["demo"]
    offered = [tools_bytes(r) for r in loopback.requests]
    assert offered[0] == offered[1] != offered[2]  # the cache breaks once ...
    assert offered[2:] == [offered[2]] * 4  # ... and holds again


async def test_an_mcp_agents_turns_make_the_store_calls_of_any_turn(
    stdio_env: dict[str, str], loopback: LoopbackServer, tmp_path: Path
) -> None:
    from tests.executor.test_store_calls import CountingStore

    inner = hs.SQLiteStore(tmp_path / "count.db")
    counting = CountingStore(inner)
    executor = hs.Executor(store=counting)  # type: ignore[arg-type]
    agent = make_agent(loopback, demo_server(stdio_env))
    loopback.script(text("one"), text("two"))
    try:
        await turn(executor, agent, "s", "first")  # takes the offer: in the claim's write
        first = counting.take()
        await turn(executor, agent, "s", "second")
        second = counting.take()
    finally:
        await executor.close()
        await inner.close()
    assert first == second == ["read_snapshot", "write_turn", "write_turn"]


async def test_a_server_added_to_the_agent_later_is_offered_from_its_first_turn_there(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    server = demo_server(stdio_env)
    loopback.script(text("one"), text("two"), text("three"))
    try:
        await turn(executor, make_agent(loopback, lookup), "s", "before")
        await turn(executor, make_agent(loopback, lookup, server), "s", "with it")
        state.hide("echo")
        await turn(executor, make_agent(loopback, lookup, server), "s", "and after")
    finally:
        await executor.close()
    before, with_it, after = (offered_names(r) for r in loopback.requests)
    assert before == ["lookup"]
    assert with_it == after and "demo__echo" in after
