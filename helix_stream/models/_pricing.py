"""What a model call cost, in US dollars, from litellm's cost map: the one owner of prices.

The prices are litellm's cost map (``litellm.model_cost``; with
``LITELLM_LOCAL_MODEL_COST_MAP=True``, the map bundled with the installed litellm, so the
figures change only when litellm is upgraded). A model is looked up by the name the call was
made with (``"anthropic/claude-sonnet-4-5"``), then without its provider prefix
(``"claude-sonnet-4-5"``), then by the model the response named. A model the map does not
have (``helix/demo``, a Router's model group, a name of your own) has no price: its cost is
``None``, never a guess.

A call's input tokens are billed in three parts (:class:`~helix_stream.chunks.Usage` counts
the cached ones inside ``input_tokens``, as litellm reports them):

* read from the provider's cache (``cached_input_tokens``) at ``cache_read_input_token_cost``;
* written to it (``cache_creation_input_tokens``, Anthropic's cache writes) at
  ``cache_creation_input_token_cost``;
* the rest, uncached, at ``input_cost_per_token``;

and the output tokens at ``output_cost_per_token``. A map entry without a cache price bills
those tokens at the input price. :attr:`CallCost.cost_without_cache_usd` is the same call with
all its input billed as uncached: what the cache saved is the difference. Tiered prices (above
200k tokens, Anthropic's 1-hour cache writes) are not modelled: the base prices apply.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .._step_parts import Usage

__all__ = ["CallCost", "Prices", "call_cost", "cost_of", "model_prices", "priced"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prices:
    """One model's prices per token, in USD (a cache price falls back to the input price)."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass(frozen=True, slots=True, kw_only=True)
class CallCost:
    """A model call's cost in USD: as billed (cache reads and writes at their prices), and
    with all its input billed as uncached."""

    cost_usd: float
    cost_without_cache_usd: float


def model_prices(*names: str | None) -> Prices | None:
    """The prices of the first of ``names`` litellm's cost map has (each as given, then
    without its provider prefix), or ``None`` when it has none of them."""
    from ._litellm import litellm_module

    cost_map: dict[str, Any] = litellm_module().model_cost
    for name in names:
        if not name:
            continue
        for key in (name, name.split("/", 1)[1] if "/" in name else None):
            entry = cost_map.get(key) if key else None
            if isinstance(entry, dict):
                prices = _prices(entry)
                if prices is not None:
                    return prices
    return None


def _prices(entry: dict[str, Any]) -> Prices | None:
    given, output = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    if not isinstance(given, (int, float)) or not isinstance(output, (int, float)):
        return None
    read = entry.get("cache_read_input_token_cost")
    write = entry.get("cache_creation_input_token_cost")
    return Prices(
        input=float(given),
        output=float(output),
        cache_read=float(read) if isinstance(read, (int, float)) else float(given),
        cache_write=float(write) if isinstance(write, (int, float)) else float(given),
    )


def call_cost(usage: Usage, prices: Prices | None) -> CallCost | None:
    """What a call with ``usage`` cost at ``prices`` (``None`` without prices).

    Example::

        cost = call_cost(step.usage, model_prices("anthropic/claude-sonnet-4-5"))
    """
    if prices is None:
        return None
    read, write = usage.cached_input_tokens, usage.cache_creation_input_tokens
    uncached = max(usage.input_tokens - read - write, 0)
    output = usage.output_tokens * prices.output
    billed = uncached * prices.input + read * prices.cache_read + write * prices.cache_write
    return CallCost(
        cost_usd=billed + output,
        cost_without_cache_usd=usage.input_tokens * prices.input + output,
    )


def cost_of(usage: Usage, model: str, response_model: str | None = None) -> CallCost | None:
    """What a call to ``model`` (answered as ``response_model``) with ``usage`` cost, or
    ``None`` when litellm's cost map has no price for it: the figures of a call's cache
    ledger (``cost_usd``, ``cost_without_cache_usd``)."""
    return call_cost(usage, model_prices(model, response_model))


def priced(usage: Usage, cost: CallCost | None) -> Usage:
    """``usage`` with its ``cost_usd``: the call's cost (:func:`cost_of`), or ``None`` when the
    model has no price in litellm's cost map."""
    return replace(usage, cost_usd=cost.cost_usd if cost is not None else None)
