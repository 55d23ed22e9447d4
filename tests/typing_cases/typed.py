"""What a user's ``mypy --strict`` sees through the front door (checked, never run)."""

from __future__ import annotations

from typing import Any, Literal, assert_type

from pydantic import BaseModel

import helix_stream as hs


class City(BaseModel):
    name: str
    population: int


class WeatherInput(BaseModel):
    city: str


class WeatherContext(BaseModel):
    api_key: str


class Weather(BaseModel):
    forecast: str


@hs.tool(context_schema=WeatherContext)
async def get_weather(input: WeatherInput, ctx: hs.ToolContext[WeatherContext]) -> Weather:
    """The weather in a city."""
    assert_type(ctx.context, WeatherContext)
    assert_type(ctx.context.api_key, str)
    return Weather(forecast="sunny")


@hs.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def lookup(input: WeatherInput, ctx: hs.ToolContext[None]) -> str:
    return input.city


lookup_tool = hs.tool(name="lookup", input_schema=WeatherInput, execute=lookup)
charge_tool = hs.tool(name="charge", input_schema=WeatherInput, execute=lookup, side_effects=True)
ask_user = hs.tool(name="ask_user", input_schema=WeatherInput)  # a client tool


async def tools_keep_their_types(ctx: hs.ToolContext[WeatherContext]) -> None:
    assert_type(get_weather, hs.Tool[WeatherInput, WeatherContext, Weather])
    assert_type(add, hs.Tool[Any, Any, int])
    assert_type(lookup_tool, hs.Tool[WeatherInput, None, str])
    assert_type(charge_tool, hs.Tool[WeatherInput, None, str])
    assert_type(ctx.idempotency_key, str)
    assert_type(await get_weather.run(WeatherInput(city="Paris"), ctx), Weather)
    if get_weather.execute is not None:
        get_weather.execute(WeatherInput(city="Paris"), ctx)
    plain: hs.Tool = get_weather  # usable where a Tool is expected
    hs.stream_text(model="helix/demo", tools=[get_weather, add, lookup_tool, ask_user, plain])


async def outputs_are_typed() -> None:
    result = hs.stream_text(model="helix/demo", prompt="Largest city in France?", output=City)
    assert_type(result, hs.StreamTextResult[City])
    assert_type(result.output, City | None)
    out = await hs.generate_text(model="helix/demo", prompt="x", output=City, temperature=0.2)
    assert_type(out, hs.GenerateTextResult[City])
    assert_type(out.output, City)
    assert_type(hs.generate_text_sync(model="helix/demo", prompt="x", output=City).output, City)

    agent = hs.Agent(name="cities", output_schema=City)
    assert_type(agent, hs.Agent[City])
    run = hs.Executor().run(agent, "s", "Largest city in France?")
    assert_type(run, hs.StreamTextResult[City])
    assert_type(hs.Executor().run_sync(agent, "s", "again").output, City)


def callbacks_get_typed_events() -> None:
    def on_step_end(event: hs.StepEndEvent) -> None:
        assert_type(event.step.text, str)

    async def on_tool_call_end(event: hs.ToolCallEndEvent) -> None:
        assert_type(event.duration, float)

    def on_finish(result: hs.GenerateTextResult[Any]) -> None:
        print(result.text)

    hs.stream_text(
        model="helix/demo",
        prompt="hi",
        on_step_end=on_step_end,
        on_tool_call_end=on_tool_call_end,
        on_finish=on_finish,
        provider_options={"top_k": 3},
        seed=1,
    )


def sync_forms_keep_the_types() -> None:
    streamed = hs.stream_text_sync(model="helix/demo", prompt="x", output=City)
    assert_type(streamed.output, City | None)
    assert_type(hs.stream_text_sync(model="helix/demo", prompt="x").text, str)


def hooks_get_typed_events() -> None:
    from helix_stream.hooks import ActionResultEvent, FailureEvent, TurnStartedEvent

    async def on_result(event: ActionResultEvent, ctx: hs.HookContext) -> None:
        assert_type(event.type, Literal["action.result"])
        assert_type(event.data["tool_name"], str)
        assert_type(event.data["result"], hs.ToolResult)

    def on_failed(event: FailureEvent, ctx: hs.HookContext) -> None:
        assert_type(event.data["code"], str | None)

    def on_any(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        assert_type(event.type, str)  # as documented: event.type and event.data
        if isinstance(event, TurnStartedEvent):
            assert_type(event.data["turn"], int)

    hs.define_hook(
        events={
            "action.result": on_result,
            "turn.failed": on_failed,
            # A lambda's event is typed by the name it is filed under.
            "step.started": lambda event, ctx: assert_type(event.data["step"], int),
            "session.waiting": lambda event, ctx: print(event.data["pending"][0]),
            "*": on_any,
        }
    )
