"""Tool sources: an agent's function tools, MCP servers and skills are asked once per turn, in
the run's one setup; an MCP server with a stored offer is not listed again."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
import helix_stream.telemetry as telemetry
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import State, stdio_args


@hs.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def make_agent(loopback: LoopbackServer, *tools: Any) -> hs.Agent:
    return hs.Agent(
        name="support",
        model="openai/loopback",
        tools=list(tools),
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )


def count_setups(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """One entry per run setup: each makes the run's telemetry recorder once."""
    made: list[str | None] = []
    real = telemetry.recorder_for

    def counting(*args: Any, **kw: Any) -> Any:
        made.append(kw.get("conversation_id"))
        return real(*args, **kw)

    monkeypatch.setattr(telemetry, "recorder_for", counting)
    return made


async def consume(run: hs.StreamTextResult) -> list[Any]:
    chunks = [c async for c in run]
    assert not [c for c in chunks if c.type == "error"]
    return chunks


async def test_a_session_lists_its_server_once_across_three_turns_and_sets_up_once_a_turn(
    stdio_env: dict[str, str],
    state: State,
    loopback: LoopbackServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setups = count_setups(monkeypatch)
    server = hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo")
    agent = make_agent(loopback, lookup, server)
    executor = hs.Executor(store=hs.MemoryStore())
    try:
        for n in range(3):
            loopback.script(text(f"answer {n}"))
            await consume(executor.run(agent, "s1", f"turn {n}"))
    finally:
        await executor.close()
    assert state.lines("lists") == ["tools/list"]  # the first turn's offer, then none
    assert setups == ["s1", "s1", "s1"]
    names = [[t["function"]["name"] for t in body["tools"]] for body in loopback.bodies()]
    assert names[0][0] == "lookup" and "demo__echo" in names[0]
    assert names == [names[0]] * 3  # every turn offers the stored tools, in order


async def test_an_agent_without_servers_sets_up_once_a_turn(
    loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    setups = count_setups(monkeypatch)
    agent = make_agent(loopback, lookup)
    executor = hs.Executor(store=hs.MemoryStore())
    for n in range(2):
        loopback.script(text(f"answer {n}"))
        await consume(executor.run(agent, "s1", f"turn {n}"))
    assert setups == ["s1", "s1"]


async def test_a_tool_removed_since_the_offer_is_unavailable_at_call_time_without_a_call(
    stdio_env: dict[str, str], state: State, loopback: LoopbackServer
) -> None:
    server = hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo")
    agent = make_agent(loopback, server)
    executor = hs.Executor(store=hs.MemoryStore())
    try:
        loopback.script(text("first"))
        await consume(executor.run(agent, "s1", "turn 1"))
        state.hide("echo")
        loopback.script(tool_calls(("demo__echo", {"text": "two"})), text("second"))
        chunks = await consume(executor.run(agent, "s1", "turn 2"))
    finally:
        await executor.close()
    refused = [c for c in chunks if c.type == "tool-not-executed"]
    assert [(c.tool_name, c.reason) for c in refused] == [("demo__echo", "tool_unavailable")]
    assert state.lines("calls") == []  # nothing reached the server
    # The second turn listed only to check the call (its tools came from the stored offer).
    assert state.lines("lists") == ["tools/list", "tools/list"]
    assert "demo__echo" in [t["function"]["name"] for t in loopback.bodies()[-1]["tools"]]
