"""hs.tool_result_from: one tool's output out of a step's results, else None."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from tests.loopback import LoopbackServer, text, tool_calls


class City(BaseModel):
    city: str


class Weather(BaseModel):
    city: str
    temperature: int


@hs.tool
def get_weather(input: City) -> Weather:
    """The weather in a city."""
    return Weather(city=input.city, temperature=21)


@hs.tool
def get_time(input: City) -> str:
    """The time in a city."""
    if input.city == "Atlantis":
        raise ValueError("no such city")
    return "12:00"


def result(**fields: Any) -> hs.ToolResult:
    return hs.ToolResult(tool_call_id="call_1", **fields)


def test_the_output_of_that_tool_comes_back() -> None:
    got = result(
        tool_name="get_weather", status="output", output={"city": "Paris", "temperature": 21}
    )
    assert hs.tool_result_from(got, get_weather) == {"city": "Paris", "temperature": 21}
    assert hs.tool_result_from(got, get_time) is None


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "error", "error": "Tool 'get_weather' failed"},
        {"status": "not_executed", "reason": "tool_inactive"},
        {"status": "denied"},
        {"status": "pending"},
    ],
    ids=["error", "not-executed", "denied", "pending"],
)
def test_anything_but_an_output_is_none(fields: dict[str, Any]) -> None:
    assert hs.tool_result_from(result(tool_name="get_weather", **fields), get_weather) is None


def test_something_else_than_a_tool_result_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="needs a ToolResult"):
        hs.tool_result_from({"tool_name": "get_weather"}, get_weather)  # type: ignore[arg-type]


async def test_it_picks_each_tools_results_out_of_a_real_run(loopback: LoopbackServer) -> None:
    loopback.script(
        tool_calls(
            ("get_weather", {"city": "Paris"}),
            ("get_time", {"city": "Paris"}),
            ("get_time", {"city": "Atlantis"}),
            ("get_news", {"city": "Paris"}),
        ),
        text("Sunny, noon."),
    )
    run = hs.stream_text(**loopback.llm(), prompt="Paris?", tools=[get_weather, get_time])
    await run.text()
    (first, _) = await run.steps()
    weather = [hs.tool_result_from(r, get_weather) for r in first.tool_results]
    times = [hs.tool_result_from(r, get_time) for r in first.tool_results]
    assert weather == [{"city": "Paris", "temperature": 21}, None, None, None]
    assert times == [None, "12:00", None, None]  # the error and the undeclared call: None
    assert Weather.model_validate(weather[0]) == Weather(city="Paris", temperature=21)


async def test_an_mcp_servers_results_are_picked_by_the_server(
    loopback: LoopbackServer, tmp_path: Any
) -> None:
    pytest.importorskip("mcp", reason="needs the mcp package: pip install 'helix-stream[mcp]'")
    import sys

    from tests.mcp.conftest import stdio_args

    server = hs.MCPServer.stdio(
        sys.executable, stdio_args(), env={"HELIX_MCP_STATE": str(tmp_path)}, name="demo"
    )
    other = hs.MCPServer.stdio(sys.executable, stdio_args(), name="elsewhere")
    loopback.script(
        tool_calls(
            ("demo__echo", {"text": "hi"}),
            ("demo__forecast", {"city": "Paris"}),
            ("demo__fail", {"reason": "no"}),
            ("get_weather", {"city": "Oslo"}),
        ),
        text("done"),
    )
    async with server:
        tools = [*await server.tools(), get_weather]
        run = hs.stream_text(**loopback.llm(), prompt="go", tools=tools)
        await run.text()
        (first, _) = await run.steps()
    results = first.tool_results
    assert [(r.server, r.server_tool) for r in results] == [
        ("demo", "echo"),
        ("demo", "forecast"),
        ("demo", "fail"),
        (None, None),
    ]
    picked = [hs.tool_result_from(r, server) for r in results]
    assert picked[:2] == [r.output for r in results[:2]]
    assert picked[1] == {"city": "Paris", "temp_c": 21, "sky": "sunny"}
    assert picked[2:] == [None, None]  # the server's error, and another tool's output
    assert [hs.tool_result_from(r, other) for r in results] == [None] * 4
    assert hs.tool_result_from(results[3], get_weather) == {"city": "Oslo", "temperature": 21}
    # A function tool named like the server does not pick the server's results.
    assert hs.tool_result_from(results[0], hs.tool(name="demo", input_schema=City)) is None
