"""``hs.ToolContext``: frozen, generic in its context, every capability given at construction."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel

import helix_stream as hs


class WeatherContext(BaseModel):
    api_key: str


def test_a_tool_context_is_frozen() -> None:
    ctx = hs.ToolContext(context=None, tool_call_id="c1", tool_name="t")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.tool_call_id = "c2"  # type: ignore[misc]


def test_a_parametrized_context_parameter_is_the_context_not_an_input() -> None:
    @hs.tool(context_schema=WeatherContext)
    def weather(city: str, ctx: hs.ToolContext[WeatherContext]) -> str:
        """Weather."""
        return f"{city}:{ctx.context.api_key}"

    assert list(weather.input_schema.model_fields) == ["city"]
    ctx = hs.ToolContext[WeatherContext](
        context=WeatherContext(api_key="k"), tool_call_id="c1", tool_name="weather"
    )
    assert weather.execute is not None
    assert weather.execute(weather.input_schema(city="Oslo"), ctx) == "Oslo:k"


async def test_capabilities_missing_outside_a_session_raise_clear_errors() -> None:
    ctx = hs.ToolContext(context=None, tool_call_id="c1", tool_name="t")
    with pytest.raises(hs.FrameworkNotSupportedError, match="needs a session"):
        await ctx.add_context([hs.notice("x")])
    with pytest.raises(hs.FrameworkNotSupportedError, match="needs a session"):
        await ctx.get_sandbox()
    with pytest.raises(hs.FrameworkNotSupportedError, match="needs a session"):
        ctx.get_skill("research")
    with pytest.raises(hs.InvalidRequestError, match="declares no auth="):
        await ctx.get_token()
    with pytest.raises(hs.FrameworkNotSupportedError, match="running loop"):
        ctx.write_data("progress", {"done": 1})
