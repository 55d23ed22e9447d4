"""``usage_limits=``: each limit stops the run before the model call that would cross it, and
the loopback server receives no request for that call (real HTTP through litellm)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models._pricing import model_prices
from helix_stream.models._request_tokens import request_tokens
from tests.loopback import LoopbackServer, text, tool_calls


class CityInput(BaseModel):
    city: str


def weather() -> hs.Tool:
    async def run(input: CityInput, ctx: hs.ToolContext) -> dict[str, Any]:
        return {"city": input.city, "temp": 21}

    return hs.tool(name="get_weather", description="Weather", input_schema=CityInput, execute=run)


def script(loopback: LoopbackServer, **usage: Any) -> None:
    """Three calls: two tool calls, then the answer; the first reports ``usage``."""
    loopback.replies.clear()  # what a refused run left unsent
    loopback.script(
        tool_calls(("get_weather", {"city": "Paris"}), **usage),
        tool_calls(("get_weather", {"city": "Rome"})),
        text("Mild in both."),
    )


async def run(loopback: LoopbackServer, limits: hs.UsageLimits | None, **llm: Any) -> Any:
    params = {**loopback.llm(), **llm}
    return await hs.generate_text(
        **params, prompt="Weather in Paris and Rome?", tools=[weather()], usage_limits=limits
    )


async def second_request_tokens(loopback: LoopbackServer, **usage: Any) -> int:
    """The input tokens of the second call's request as the budget counts them (a run with no
    limit, whose middleware sees each request)."""
    counted: list[int] = []

    class Count(hs.ModelMiddleware):
        async def transform_params(self, params: Any, *, stream: bool) -> Any:
            counted.append(request_tokens(params))
            return params

    script(loopback, **usage)
    await hs.generate_text(
        **loopback.llm(),
        prompt="Weather in Paris and Rome?",
        tools=[weather()],
        middleware=[Count()],
    )
    loopback.reset()
    return counted[1]


async def refused(loopback: LoopbackServer, limits: hs.UsageLimits, **llm: Any) -> Any:
    with pytest.raises(hs.UsageLimitExceededError) as info:
        await run(loopback, limits, **llm)
    return info.value


async def test_a_request_limit_stops_before_the_call_past_it(loopback: LoopbackServer) -> None:
    script(loopback)
    error = await refused(loopback, hs.UsageLimits(requests=2))
    assert len(loopback.requests) == 2  # the third call was never sent
    assert (error.code, error.http_status, error.retryable) == ("usage_limit_exceeded", 429, False)
    assert (error.limit, error.scope) == ("requests", "run")
    assert "requests: 2 made, the limit is 2" in error.message
    assert "nothing was sent" in error.message


async def test_a_request_limit_of_zero_sends_nothing(loopback: LoopbackServer) -> None:
    script(loopback)
    await refused(loopback, hs.UsageLimits(requests=0))
    assert loopback.requests == []


async def test_an_input_token_limit_counts_the_next_request_before_it_is_sent(
    loopback: LoopbackServer,
) -> None:
    second = await second_request_tokens(loopback, usage=(100, 5))
    script(loopback, usage=(100, 5))
    error = await refused(loopback, hs.UsageLimits(input_tokens=100 + second - 1))
    assert len(loopback.requests) == 1
    assert error.limit == "input_tokens"
    assert f"100 used + {second:,} in the next request" in error.message
    # One token more and the second call fits; the third (10 reported by the second) does not.
    script(loopback, usage=(100, 5))
    await refused(loopback, hs.UsageLimits(input_tokens=100 + second))
    assert len(loopback.requests) == 3  # 1 (the first run) + 2


async def test_a_total_token_limit_counts_output_used_and_the_next_input(
    loopback: LoopbackServer,
) -> None:
    second = await second_request_tokens(loopback, usage=(100, 5))
    script(loopback, usage=(100, 5))
    error = await refused(loopback, hs.UsageLimits(total_tokens=105 + second - 1))
    assert len(loopback.requests) == 1
    assert error.limit == "total_tokens"


@pytest.mark.parametrize(
    ("limit", "used"),
    [("output_tokens", 5), ("uncached_input_tokens", 40)],
    ids=["output", "uncached-input"],
)
async def test_an_after_the_fact_limit_stops_once_reached(
    loopback: LoopbackServer, limit: str, used: int
) -> None:
    usage = {"usage": (100, 5), "usage_details": {"prompt_tokens_details": {"cached_tokens": 60}}}
    script(loopback, **usage)
    error = await refused(loopback, hs.UsageLimits(**{limit: used}))
    assert len(loopback.requests) == 1  # reached by the first call: the second never starts
    assert error.limit == limit
    assert f"{limit}: {used} used, the limit {used} is reached" in error.message
    # Not reached yet (one more): the second call is made, and then it is.
    script(loopback, **usage)
    await refused(loopback, hs.UsageLimits(**{limit: used + 1}))
    assert len(loopback.requests) == 3


async def test_a_cost_limit_stops_once_the_cost_reached_it(loopback: LoopbackServer) -> None:
    prices = model_prices("openai/gpt-4o-mini")
    assert prices is not None
    cost = 100 * prices.input + 5 * prices.output  # the first call, nothing cached
    script(loopback, usage=(100, 5))
    error = await refused(loopback, hs.UsageLimits(cost_usd=cost), model="openai/gpt-4o-mini")
    assert len(loopback.requests) == 1
    assert error.limit == "cost_usd"
    script(loopback, usage=(100, 5))
    result = await run(loopback, hs.UsageLimits(cost_usd=1.0), model="openai/gpt-4o-mini")
    assert result.usage.cost_usd == pytest.approx(
        cost + 2 * (10 * prices.input + 5 * prices.output)
    )


async def test_a_cost_limit_for_a_model_without_a_price_is_refused_at_entry(
    loopback: LoopbackServer,
) -> None:
    script(loopback)
    with pytest.raises(hs.FrameworkNotSupportedError, match=r"no.*'openai/loopback'"):
        await run(loopback, hs.UsageLimits(cost_usd=1.0))
    assert loopback.requests == []


async def test_a_prepare_step_model_without_a_price_is_refused_before_its_call(
    loopback: LoopbackServer,
) -> None:
    def unpriced(step: hs.StepInput) -> dict[str, Any] | None:
        return {"model": "openai/loopback"} if step.step_number == 1 else None

    script(loopback)
    with pytest.raises(hs.FrameworkNotSupportedError):
        await hs.generate_text(
            **{**loopback.llm(), "model": "openai/gpt-4o-mini"},
            prompt="Weather?",
            tools=[weather()],
            prepare_step=unpriced,
            usage_limits=hs.UsageLimits(cost_usd=1.0),
        )
    assert len(loopback.requests) == 1


async def test_without_a_price_the_run_cost_is_none(loopback: LoopbackServer) -> None:
    script(loopback)
    result = await run(loopback, hs.UsageLimits(requests=5))
    assert result.usage.cost_usd is None
    assert [s.usage.cost_usd for s in result.steps] == [None, None, None]


async def test_stream_text_ends_with_the_error_chunk(loopback: LoopbackServer) -> None:
    script(loopback)
    result = hs.stream_text(
        **loopback.llm(),
        prompt="Weather?",
        tools=[weather()],
        usage_limits=hs.UsageLimits(requests=1),
    )
    chunks = [chunk async for chunk in result]
    errors = [c.error for c in chunks if isinstance(c, hs.chunks.ErrorChunk)]
    assert [type(e) for e in errors] == [hs.UsageLimitExceededError]
    assert len(loopback.requests) == 1


@pytest.mark.parametrize(
    "limits",
    [{"requests": -1}, {"cost_usd": "1"}, {"input_tokens": 1.5}, {"output_tokens": True}],
    ids=["negative", "string", "float-tokens", "bool"],
)
def test_a_limit_that_is_not_a_count_is_refused(limits: dict[str, Any]) -> None:
    with pytest.raises(hs.InvalidRequestError, match="UsageLimits"):
        hs.UsageLimits(**limits)


async def test_usage_limits_that_are_not_usage_limits_are_refused(
    loopback: LoopbackServer,
) -> None:
    with pytest.raises(hs.InvalidRequestError, match="usage_limits"):
        await hs.generate_text(**loopback.llm(), prompt="x", usage_limits={"requests": 1})  # type: ignore[typeddict-item]
    with pytest.raises(hs.InvalidRequestError, match="session_limits"):
        hs.Agent(name="a", session_limits={"requests": 1})  # type: ignore[arg-type]
    assert loopback.requests == []
