"""Budgets as values: :class:`UsageLimits` (what a run or a session may use) and
:class:`UsageTotals` (what it has used, as a session keeps it in its store).

Where the limits are judged, before each model call, is :mod:`helix_stream.loop._budget`;
what a call cost is :mod:`helix_stream.models._pricing`. These are plain values, below both,
so that an agent, the loop and the session all name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from ._step_parts import Usage
from .errors import InvalidRequestError

__all__ = ["LIMIT_NAMES", "UsageLimits", "UsageTotals", "check_limits"]


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageLimits:
    """Limits on what a run (``usage_limits=``) or a session (``Agent(session_limits=)``) may
    use; ``None``: no limit. A limit that the next model call would cross stops the run before
    that call with :class:`~helix_stream.errors.UsageLimitExceededError` (the prompt caching
    guide, "Budgets and cost", says exactly when each limit counts as crossed).

    Attributes:
        requests: Model calls.
        input_tokens: Input tokens, cached ones included; the next request's are counted with
            litellm's token counter before it is sent.
        uncached_input_tokens: Input tokens neither read from the provider's cache nor written
            to it, as the providers reported them.
        output_tokens: Output tokens, as reported.
        total_tokens: Input plus output tokens.
        cost_usd: US dollars, priced from litellm's cost map with its cache prices. A run whose
            model has no price there is refused at entry (``FrameworkNotSupportedError``).

    Raises:
        InvalidRequestError: a limit that is negative or not a number.

    Example::

        limits = hs.UsageLimits(requests=10, cost_usd=0.50)
        result = await hs.generate_text(model="helix/demo", prompt="hi", usage_limits=limits)
    """

    requests: int | None = None
    input_tokens: int | None = None
    uncached_input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        for name in LIMIT_NAMES:
            value = getattr(self, name)
            if value is None:
                continue
            number = (int, float) if name == "cost_usd" else (int,)
            if isinstance(value, bool) or not isinstance(value, number) or value < 0:
                kind = "a number" if name == "cost_usd" else "a whole number"
                raise InvalidRequestError(
                    f"UsageLimits({name}={value!r}): a limit is {kind} of 0 or more, or None "
                    "for no limit."
                )

    def given(self) -> dict[str, float]:
        """The limits that are set, by name."""
        return {n: getattr(self, n) for n in LIMIT_NAMES if getattr(self, n) is not None}


LIMIT_NAMES: tuple[str, ...] = tuple(f.name for f in fields(UsageLimits))


def check_limits(value: object, *, where: str) -> None:
    """Refuse a limits value that is not a :class:`UsageLimits` (or ``None``).

    Raises:
        InvalidRequestError: it is something else.
    """
    if value is not None and not isinstance(value, UsageLimits):
        raise InvalidRequestError(
            f"{where} takes hs.UsageLimits(...) or None, not a {type(value).__name__}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageTotals:
    """What a run or a session used: its model calls' figures added up.

    ``executor.usage(session_id)`` reads a session's, which its store keeps with the session
    (each step's write adds its call), so they survive restarts; they count what was spent,
    so a rewind leaves them as they are, and a branch starts from its source's.

    Attributes:
        requests: Model calls that completed.
        input_tokens: Input tokens, cached ones included.
        uncached_input_tokens: Input tokens neither read from the provider's cache nor written
            to it (billed at the plain input price): with the two below, ``input_tokens``.
        cached_input_tokens: Input tokens read from the provider's cache.
        cache_creation_input_tokens: Input tokens written to it.
        output_tokens: Output tokens.
        total_tokens: Input plus output tokens.
        cost_usd: US dollars (litellm's cost map); ``None`` once a call could not be priced.

    Example::

        totals = await executor.usage("chat-1")
        print(totals.requests, totals.cached_input_tokens, totals.cost_usd)
    """

    requests: int = 0
    input_tokens: int = 0
    uncached_input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = 0.0

    def plus(self, usage: Usage) -> UsageTotals:
        """These totals with one more model call's ``usage``."""
        read, write = usage.cached_input_tokens, usage.cache_creation_input_tokens
        cost, call_cost = self.cost_usd, usage.cost_usd
        return UsageTotals(
            requests=self.requests + 1,
            input_tokens=self.input_tokens + usage.input_tokens,
            uncached_input_tokens=(
                self.uncached_input_tokens + max(usage.input_tokens - read - write, 0)
            ),
            cached_input_tokens=self.cached_input_tokens + read,
            cache_creation_input_tokens=self.cache_creation_input_tokens + write,
            output_tokens=self.output_tokens + usage.output_tokens,
            total_tokens=self.total_tokens + usage.total_tokens,
            cost_usd=None if cost is None or call_cost is None else cost + call_cost,
        )

    def __add__(self, other: UsageTotals) -> UsageTotals:
        mine, theirs = self.cost_usd, other.cost_usd
        summed = {
            f.name: getattr(self, f.name) + getattr(other, f.name)
            for f in fields(self)
            if f.name != "cost_usd"
        }
        cost = None if mine is None or theirs is None else mine + theirs
        return UsageTotals(**summed, cost_usd=cost)

    def to_json(self) -> dict[str, Any]:
        """The totals as the store keeps them (a JSON object)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Any) -> UsageTotals:
        """Totals read back from :meth:`to_json` (nothing stored: zeros)."""
        if not isinstance(data, Mapping):
            return cls()
        counts = {
            f.name: int(data.get(f.name, 0))
            for f in fields(cls)
            if f.name != "cost_usd" and isinstance(data.get(f.name, 0), int)
        }
        cost = data.get("cost_usd", 0.0)
        return cls(**counts, cost_usd=float(cost) if isinstance(cost, (int, float)) else None)
