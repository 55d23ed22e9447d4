"""What one model call did with the provider's prompt cache: the cache ledger.

A step's :class:`CacheLedger` (``StepResult.cache``, the ``on_model_call_end`` event's
``cache``, the step span's ``helix.prompt_cache.*`` attributes) says how many input tokens the
provider read from its cache and wrote to it, where this request first differs from the
session's previous request to the same model (the segment that broke the cached prefix), the
provider's own miss reason where it gives one, and the lifetime each cache breakpoint got.

The values are made by the model layer (``models/_cache_book.py``, ``models/_cache_segments.py``);
this module only names them, so that a step's result can carry them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CacheBreakpoint", "CacheLedger", "CacheTTL"]

CacheTTL = Literal["5m", "1h"]
"""A cache breakpoint's lifetime: Anthropic's default five minutes, or one hour."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheBreakpoint:
    """One cache breakpoint (a ``cache_control`` marker) of a request.

    Attributes:
        segment: Where it is: ``"tools"``, ``"system"`` or ``"message N"`` (``N`` the
            message's index in the request's ``messages`` list).
        ttl: The lifetime it asked for (``"5m"`` when the marker names none).

    Example::

        for step in await result.steps():
            if step.cache is not None:
                for point in step.cache.breakpoints:
                    print(point.segment, point.ttl)   # "system 1h", "message 7 5m", ...
    """

    segment: str
    ttl: CacheTTL = "5m"


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheLedger:
    """The prompt cache's account of one model call (``StepResult.cache``).

    Attributes:
        read_tokens: Input tokens read from the cache, as the provider reported them.
        write_tokens: Input tokens written to the cache, as the provider reported them
            (0 for providers that cache by themselves).
        compared: Whether there was a previous request of the session to the same model
            (in this process) to compare with; ``False`` on the first one.
        diverged_at: The first segment where this request differs from that previous one:
            ``"tools"``, ``"system"`` or ``"message N"`` (``N`` its index in the request's
            ``messages``; a message the previous request had and this one lacks counts as
            changed); ``None`` when this request is a strict extension of it (or there was
            none: see ``compared``). Cache markers are not part of the comparison.
        miss_reason: The provider's own reason for a cache miss, where it gives one
            (Anthropic's ``cache_miss_reason`` type: ``"system_changed"``,
            ``"tools_changed"``, ``"messages_changed"``, ``"model_changed"``,
            ``"previous_message_not_found"``, ``"unavailable"``); ``None`` otherwise.
        missed_tokens: The provider's estimate of the input tokens after that divergence
            (Anthropic's ``cache_missed_input_tokens``), where it gives one.
        breakpoints: The request's cache breakpoints with the lifetime each got, in the
            provider's cache order (tools, system, messages).
        cost_usd: The call's estimated cost in US dollars (its input at the cache's read
            and write prices, and its output), from litellm's cost map: the same figure as
            the step's ``usage.cost_usd``; ``None`` where the model is not priced.
        cost_without_cache_usd: What the same call would have cost with all its input
            billed as uncached; ``None`` where the model is not priced.

    Example::

        result = await hs.generate_text(model="anthropic/claude-sonnet-4-5", prompt="Hi")
        ledger = result.steps[0].cache
        if ledger is not None and ledger.diverged_at is not None:
            print("cache prefix broken at", ledger.diverged_at, ledger.miss_reason)
    """

    read_tokens: int = 0
    write_tokens: int = 0
    compared: bool = False
    diverged_at: str | None = None
    miss_reason: str | None = None
    missed_tokens: int | None = None
    breakpoints: tuple[CacheBreakpoint, ...] = ()
    cost_usd: float | None = None
    cost_without_cache_usd: float | None = None
