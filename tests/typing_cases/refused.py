"""What a user's ``mypy --strict`` refuses (checked, never run): each line is the error its
``# type: ignore[...]`` names, or ``--warn-unused-ignores`` fails the check."""

from __future__ import annotations

from pydantic import BaseModel

import helix_stream as hs


class WeatherInput(BaseModel):
    city: str


class WeatherContext(BaseModel):
    api_key: str


@hs.tool(context_schema=WeatherContext)
async def get_weather(input: WeatherInput, ctx: hs.ToolContext[WeatherContext]) -> str:
    """The weather in a city."""
    print(ctx.context.api_secret)  # type: ignore[attr-defined]
    return "sunny"


class City(BaseModel):
    name: str


async def refused(ctx: hs.ToolContext[WeatherContext]) -> None:
    hs.stream_text(model="helix/demo", tool_context={})  # type: ignore[call-arg]
    hs.stream_text(model="helix/demo", temprature=0.5)  # type: ignore[call-arg]
    hs.stream_text(model="helix/demo", max_retries="2")  # type: ignore[arg-type]
    hs.Executor().run(hs.Agent(name="a"), "s", "hi", runtime_ctx={})  # type: ignore[call-arg]
    await get_weather.run(City(name="Paris"), ctx)  # type: ignore[arg-type]
    out = await hs.generate_text(model="helix/demo", output=City)
    print(out.output.population)  # type: ignore[attr-defined]
    hs.generate_text_sync(model="helix/demo", tool_context={})  # type: ignore[call-arg]
    hs.stream_text_sync(model="helix/demo", seed="7")  # type: ignore[arg-type]


def hooks_refused() -> None:
    from helix_stream.hooks import ActionResultEvent

    def on_result(event: ActionResultEvent, ctx: hs.HookContext) -> None:
        print(event.data["tool_name"])

    hs.define_hook(events={"turn.started": on_result})  # type: ignore[typeddict-item]
    hs.define_hook(events={"turn.startd": on_result})  # type: ignore[typeddict-unknown-key]
    hs.define_hook(events={"step.started": lambda e, c: e.data["tool_name"]})  # type: ignore[typeddict-item]
