"""What one model call produced: :class:`ModelResult` and its assembly from the parse.

This module owns :func:`model_result`: the parsed stream's text, tool calls and finish
reason, the call priced once (the step's usage, its cache ledger, and the run's and the
session's totals all read this one figure), and the prompt cache's account of the call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .._cache_ledger import CacheLedger
from ..chunks import FinishReason, SourceUrl, Usage
from ..models._cache_book import CacheEntry
from ..models._fields import ResponseInfo
from ..models._parse import StepParser, map_finish_reason
from ..models._pricing import CallCost, cost_of, priced
from ..steps import StepCompaction, ToolCall

__all__ = ["ModelResult", "model_result"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResult:
    """What one model call produced."""

    text: str
    reasoning: str
    calls: list[ToolCall]
    finish_reason: FinishReason
    usage: Usage
    response_model: str | None
    assistant: dict[str, Any]
    response: ResponseInfo | None = None
    credentials: frozenset[str] = frozenset()  # what the request sent as credentials
    sources: tuple[SourceUrl, ...] = ()  # the sources the model cited
    cache: CacheLedger | None = None  # the prompt cache's account of the call
    compaction: StepCompaction | None = None  # what ran before the call (loop/_compaction.py)


def model_result(
    parser: StepParser,
    calls: list[ToolCall],
    model: str,
    *,
    credentials: frozenset[str],
    cache_entry: CacheEntry | None,
    provider_stream: Any,
) -> ModelResult:
    """The assembled call (``parser`` has read the whole stream; ``model``: the one asked for)."""
    # Priced once, here: the step's usage, its cache ledger, and the run's and the
    # session's totals all read this one figure.
    cost = cost_of(parser.usage, model, parser.response_model)
    finish_reason = map_finish_reason(parser.finish_reason)
    if calls and finish_reason == "stop":
        finish_reason = "tool-calls"
    return ModelResult(
        text="".join(parser.text),
        reasoning="".join(parser.reasoning),
        calls=calls,
        finish_reason=finish_reason,
        usage=priced(parser.usage, cost),
        response_model=parser.response_model,
        assistant=parser.assistant_message(calls),
        response=parser.response,
        credentials=credentials,
        sources=tuple(parser.sources),
        cache=_ledger(parser.usage, cost, cache_entry, provider_stream),
    )


def _ledger(
    usage: Usage, cost: CallCost | None, entry: CacheEntry | None, provider_stream: Any
) -> CacheLedger | None:
    if entry is None:
        return None
    ledger = entry.ledger(usage, provider_stream)
    if cost is None:
        return ledger
    return replace(
        ledger, cost_usd=cost.cost_usd, cost_without_cache_usd=cost.cost_without_cache_usd
    )
