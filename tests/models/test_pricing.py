"""A call's cost from litellm's cost map, cache reads and writes at their own prices: from the
usage a loopback Anthropic (and OpenAI) server reports, through litellm."""

from __future__ import annotations

import pytest

import helix_stream as hs
from helix_stream.models._litellm import litellm_module
from helix_stream.models._pricing import Prices, call_cost, cost_of, model_prices
from tests.loopback import LoopbackServer, text

CACHED = {"cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}


def map_entry(name: str) -> dict[str, float]:
    entry: dict[str, float] = litellm_module().model_cost[name]
    return entry


async def test_an_anthropic_call_is_priced_with_cache_reads_and_writes(
    loopback: LoopbackServer,
) -> None:
    loopback.script(text("Hi.", usage=(100, 20), usage_details=CACHED))
    result = await hs.generate_text(
        model="anthropic/claude-sonnet-4-5",
        api_base=loopback.anthropic_base,
        api_key="sk-loopback",
        prompt="Hello",
    )
    usage = result.usage
    # litellm counts the cache reads and writes into the prompt tokens.
    assert (usage.input_tokens, usage.cached_input_tokens) == (1300, 1000)
    assert usage.cache_creation_input_tokens == 200
    prices = map_entry("claude-sonnet-4-5")
    expected = (
        100 * prices["input_cost_per_token"]
        + 1000 * prices["cache_read_input_token_cost"]
        + 200 * prices["cache_creation_input_token_cost"]
        + 20 * prices["output_cost_per_token"]
    )
    assert usage.cost_usd == pytest.approx(expected)
    assert result.steps[0].usage.cost_usd == pytest.approx(expected)
    cost = cost_of(usage, "anthropic/claude-sonnet-4-5")
    assert cost is not None
    assert cost.cost_usd == pytest.approx(expected)
    without = 1300 * prices["input_cost_per_token"] + 20 * prices["output_cost_per_token"]
    assert cost.cost_without_cache_usd == pytest.approx(without)
    assert cost.cost_without_cache_usd > cost.cost_usd  # reads are cheaper than the writes cost
    # The step's cache ledger carries the same two figures (one pricing of the call).
    ledger = result.steps[0].cache
    assert ledger is not None
    assert ledger.cost_usd == pytest.approx(expected)
    assert ledger.cost_without_cache_usd == pytest.approx(without)


async def test_an_openai_call_is_priced_with_its_cached_tokens(loopback: LoopbackServer) -> None:
    details = {"prompt_tokens_details": {"cached_tokens": 60}}
    loopback.script(text("Hi.", usage=(100, 20), usage_details=details))
    result = await hs.generate_text(**{**loopback.llm(), "model": "openai/gpt-4o-mini"}, prompt="x")
    prices = map_entry("gpt-4o-mini")
    expected = (
        40 * prices["input_cost_per_token"]
        + 60 * prices["cache_read_input_token_cost"]
        + 20 * prices["output_cost_per_token"]
    )
    assert result.usage.cost_usd == pytest.approx(expected)


@pytest.mark.parametrize("model", ["helix/demo", "openai/no-such-model", "loopback"])
def test_a_model_the_map_does_not_have_has_no_price(model: str) -> None:
    assert model_prices(model) is None
    assert cost_of(hs.Usage(input_tokens=10, output_tokens=5, total_tokens=15), model) is None


def test_the_response_model_prices_a_call_the_request_name_cannot() -> None:
    usage = hs.Usage(input_tokens=10, output_tokens=5, total_tokens=15)
    cost = cost_of(usage, "my-router-group", "gpt-4o-mini")
    assert cost is not None and cost.cost_usd > 0


def test_a_map_entry_without_cache_prices_bills_them_as_input() -> None:
    prices = Prices(input=1.0, output=2.0, cache_read=1.0, cache_write=1.0)
    usage = hs.Usage(
        input_tokens=10, output_tokens=1, cached_input_tokens=4, cache_creation_input_tokens=3
    )
    cost = call_cost(usage, prices)
    assert cost is not None
    assert (cost.cost_usd, cost.cost_without_cache_usd) == (12.0, 12.0)


async def test_a_demo_run_has_no_cost(loopback: LoopbackServer) -> None:
    result = await hs.generate_text(model="helix/demo", prompt="hi")
    assert result.usage.cost_usd is None


def test_usages_add_their_costs_and_one_without_a_price_makes_the_sum_none() -> None:
    priced = hs.Usage(input_tokens=1, cost_usd=0.25)
    assert (priced + priced).cost_usd == 0.5
    assert (priced + hs.Usage(input_tokens=1, cost_usd=None)).cost_usd is None
    # Equal token counts are equal usages, whatever a price list says they cost.
    assert priced == hs.Usage(input_tokens=1, cost_usd=None)
