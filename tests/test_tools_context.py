"""Tools context: per-tool, validated, frozen, isolated; description callables."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import helix_stream as hs
from tests.loopback import LoopbackServer, text, tool_calls


class WeatherContext(BaseModel):
    api_key: str
    unit: str


class LookupContext(BaseModel):
    region: str


class CityInput(BaseModel):
    city: str


def make_tools(seen: dict[str, Any]) -> list[hs.Tool]:
    async def weather(input: CityInput, ctx: hs.ToolContext) -> str:
        seen["weather"] = ctx.context
        return f"{input.city} in {ctx.context.unit}"

    async def lookup(input: CityInput, ctx: hs.ToolContext) -> str:
        seen["lookup"] = ctx.context
        return ctx.context.region

    return [
        hs.tool(
            name="weather",
            input_schema=CityInput,
            context_schema=WeatherContext,
            execute=weather,
            description=lambda ctx: f"Weather, answers in {ctx.unit}",
        ),
        hs.tool(
            name="lookup", input_schema=CityInput, context_schema=LookupContext, execute=lookup
        ),
    ]


async def test_each_tool_sees_only_its_own_validated_frozen_context(
    loopback: LoopbackServer,
) -> None:
    seen: dict[str, Any] = {}
    loopback.script(tool_calls(("weather", {"city": "P"}), ("lookup", {"city": "Q"})), text("ok"))
    raw = {"api_key": "k-1", "unit": "celsius"}
    await hs.generate_text(
        **loopback.llm(),
        prompt="x",
        tools=make_tools(seen),
        tools_context={"weather": raw, "lookup": {"region": "eu"}},
    )
    assert seen["weather"].model_dump() == {"api_key": "k-1", "unit": "celsius"}
    assert seen["lookup"].model_dump() == {"region": "eu"}
    assert not hasattr(seen["lookup"], "api_key")
    assert isinstance(seen["weather"], WeatherContext)
    with pytest.raises(ValidationError):
        seen["weather"].unit = "kelvin"  # read-only
    assert raw == {"api_key": "k-1", "unit": "celsius"}


async def test_missing_tool_context_fails_before_any_request(loopback: LoopbackServer) -> None:
    with pytest.raises(hs.ToolContextError) as info:
        hs.stream_text(
            **loopback.llm(),
            prompt="x",
            tools=make_tools({}),
            tools_context={"weather": {"api_key": "k", "unit": "c"}},
        )
    assert (
        "'lookup'" in info.value.message
        and info.value.code == "validation_error"
        and info.value.http_status == 400
    )
    assert loopback.requests == []


async def test_invalid_tool_context_names_the_tool_and_the_field(loopback: LoopbackServer) -> None:
    with pytest.raises(hs.ToolContextError) as info:
        hs.stream_text(
            **loopback.llm(),
            prompt="x",
            tools=make_tools({}),
            tools_context={"weather": {"api_key": "k"}, "lookup": {"region": "eu"}},
        )
    assert "'weather'" in info.value.message and "unit" in info.value.message
    assert loopback.requests == []


async def test_tools_context_from_prepare_step_is_validated_and_carries_forward(
    loopback: LoopbackServer,
) -> None:
    seen: dict[str, Any] = {}
    units: list[str] = []

    def prepare(step: hs.StepInput) -> dict[str, Any] | None:
        if step.step_number == 1:
            return {
                "tools_context": {
                    **step.tools_context,
                    "weather": {"api_key": "k-2", "unit": "fahrenheit"},
                }
            }
        return None

    loopback.script(
        tool_calls(("weather", {"city": "P"})),
        tool_calls(("weather", {"city": "Q"})),
        tool_calls(("weather", {"city": "R"})),
        text("ok"),
    )
    await hs.generate_text(
        **loopback.llm(),
        prompt="x",
        tools=make_tools(seen),
        prepare_step=prepare,
        tools_context={
            "weather": {"api_key": "k-1", "unit": "celsius"},
            "lookup": {"region": "eu"},
        },
        on_step_finish=lambda s: units.append(seen["weather"].unit),
    )
    assert units == ["celsius", "fahrenheit", "fahrenheit", "fahrenheit"]
    descriptions = [b["tools"][0]["function"]["description"] for b in loopback.bodies()]
    assert descriptions == [
        "Weather, answers in celsius",
        "Weather, answers in fahrenheit",
        "Weather, answers in fahrenheit",
        "Weather, answers in fahrenheit",
    ]


async def test_invalid_tools_context_from_prepare_step_fails_that_step(
    loopback: LoopbackServer,
) -> None:
    loopback.script(text("never"))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="x",
        tools=make_tools({}),
        tools_context={"weather": {"api_key": "k", "unit": "c"}, "lookup": {"region": "eu"}},
        prepare_step=lambda step: {"tools_context": {"lookup": {"region": "eu"}}},
    )
    with pytest.raises(hs.ToolContextError):
        await result.text()
    assert loopback.requests == []


def test_decorator_reads_the_input_schema_from_the_signature() -> None:
    @hs.tool
    def forecast(city: str, days: int = 3) -> str:
        """Forecast for a city."""
        return f"{city}:{days}"

    assert forecast.name == "forecast" and forecast.description == "Forecast for a city."
    schema = forecast.schema(None)["function"]["parameters"]
    assert schema["required"] == ["city"] and set(schema["properties"]) == {"city", "days"}

    @hs.tool(context_schema=LookupContext, needs_approval=True)
    async def by_model(input: CityInput, ctx: hs.ToolContext) -> str:
        return input.city

    assert (
        by_model.input_schema is CityInput
        and by_model.needs_approval
        and by_model.context_schema is LookupContext
    )


async def test_signature_tools_run_with_keywords_and_context(loopback: LoopbackServer) -> None:
    @hs.tool
    def forecast(city: str, ctx: hs.ToolContext, days: int = 3) -> str:
        """Forecast."""
        return f"{city}:{days}:{ctx.tool_call_id}"

    loopback.script(tool_calls(("forecast", {"city": "Oslo", "days": 2})), text("ok"))
    out = await hs.generate_text(**loopback.llm(), prompt="x", tools=[forecast])
    assert out.steps[0].tool_results[0].output == "Oslo:2:call_0_forecast"


def test_two_tools_with_one_name_are_refused() -> None:
    from helix_stream.tools import tools_by_name

    t = hs.tool(name="a", input_schema=CityInput, execute=lambda i: 1)
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        tools_by_name([t, t])


async def test_decorator_forms_with_an_input_schema(loopback: LoopbackServer) -> None:
    @hs.tool(input_schema=CityInput)
    def forecast(input: CityInput) -> str:
        """Forecast."""
        return f"sunny in {input.city}"

    @hs.tool(name="ask", input_schema=CityInput)
    async def ask(input: CityInput, ctx: hs.ToolContext) -> str:
        return f"asked {input.city} ({ctx.tool_name})"

    client_only = hs.tool(name="client_only", input_schema=CityInput)
    assert (forecast.name, forecast.description, forecast.execute is not None) == (
        "forecast",
        "Forecast.",
        True,
    )
    assert ask.name == "ask" and ask.execute is not None and client_only.execute is None
    loopback.script(
        tool_calls(("forecast", {"city": "Oslo"}), ("ask", {"city": "Rome"})), text("ok")
    )
    out = await hs.generate_text(**loopback.llm(), prompt="x", tools=[forecast, ask])
    assert [r.output for r in out.steps[0].tool_results] == ["sunny in Oslo", "asked Rome (ask)"]
    with pytest.raises(TypeError, match="already has"):
        forecast(lambda i: "again")
