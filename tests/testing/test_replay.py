"""replay() re-runs a stored session against its own answers: no difference for the same
agent; a changed tool's result, a renamed tool and a changed prompt flow are flagged."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.testing import ScriptedModel, replay


@hs.tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny"}


@pytest.fixture
async def recorded() -> tuple[hs.Executor, hs.Agent]:
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            {"text": "Sunny in Paris."},
            {"text": "You are welcome."},
        ]
    )
    executor = hs.Executor()
    agent = hs.Agent(name="weather", model=model, tools=[get_weather])
    await executor.run(agent, "s1", "Weather in Paris?").consume()
    await executor.run(agent, "s1", "Thanks!").consume()
    return executor, agent


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_the_same_agent_replays_without_a_difference(
    recorded: tuple[hs.Executor, hs.Agent], wire: Any
) -> None:
    executor, agent = recorded
    report = await replay(executor, "s1", agent, wire=wire)
    assert report.ok, str(report)
    assert report.turns == 2 and len(report.model.requests) == 3
    assert str(report) == "replay: 2 turn(s), no difference"


async def test_a_changed_tool_result_is_flagged(recorded: tuple[hs.Executor, hs.Agent]) -> None:
    executor, agent = recorded

    @hs.tool(name="get_weather")
    def rainy(city: str) -> dict[str, Any]:
        """The weather in a city."""
        return {"city": city, "forecast": "rain"}

    report = await replay(executor, "s1", dataclasses.replace(agent, tools=[rainy]))
    (difference,) = report.differences
    assert (difference.turn, difference.step, difference.what) == (0, 0, "tool_result")
    assert "sunny" in difference.expected[0] and "rain" in difference.actual[0]


async def test_a_tool_the_agent_no_longer_has_is_flagged(
    recorded: tuple[hs.Executor, hs.Agent],
) -> None:
    executor, agent = recorded

    @hs.tool
    def get_forecast(city: str) -> str:
        """A renamed weather tool."""
        return "sunny"

    report = await replay(executor, "s1", dataclasses.replace(agent, tools=[get_forecast]))
    assert [d.what for d in report.differences] == ["tool_result"]
    assert "get_weather" in str(report.differences[0].actual[0])  # the not-executed result


async def test_a_tool_whose_input_changed_is_flagged(
    recorded: tuple[hs.Executor, hs.Agent],
) -> None:
    executor, agent = recorded

    @hs.tool(name="get_weather")
    def by_coordinates(lat: float, lon: float) -> str:
        """The weather at a place."""
        return "sunny"

    report = await replay(executor, "s1", dataclasses.replace(agent, tools=[by_coordinates]))
    (difference,) = report.differences
    assert difference.what == "tool_result" and "sunny" in difference.expected[0]


async def test_a_turn_that_now_stops_early_is_flagged(
    recorded: tuple[hs.Executor, hs.Agent],
) -> None:
    executor, agent = recorded
    report = await replay(executor, "s1", dataclasses.replace(agent, max_steps=1))
    assert [(d.turn, d.what, d.expected, d.actual) for d in report.differences] == [
        (0, "steps", 2, 1)
    ]
