"""Where a budget is judged: before each model call, against the run's ``usage_limits`` and
the session's ``session_limits`` (:class:`RunBudget`).

What "the next call would cross a limit" means, for each limit (``spent`` is what the run, or
the session, has used in the calls that completed; ``next`` the input tokens of the request
about to be sent, counted with litellm's token counter once the request is built):

* ``requests``: ``spent + 1 > limit``;
* ``input_tokens``, ``total_tokens``: ``spent + next > limit`` (a call's input is known
  before it is sent; its output only adds to ``total_tokens``);
* ``uncached_input_tokens``, ``output_tokens``, ``cost_usd``: ``spent >= limit``. How much of
  a call's input the provider's cache serves, how much it writes and what it answers are
  known only once it ran: these refuse the call after the one that reached the limit (the
  call that crosses one is the last; no call starts once it is reached).

The check runs twice per call: before the step's context pass (with ``next = 1``, the least
a request is), so that a call refused anyway writes nothing, and once the request is built
(with its count; counted only when an ``input_tokens`` or ``total_tokens`` limit is set). A
session's limits are also judged when its turn opens, before anything is written
(``session/_open.py``). A ``cost_usd`` limit with a model that litellm's cost map has no
price for is refused (``FrameworkNotSupportedError``) rather than covering part of the run.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from .._step_parts import Usage
from .._usage_limits import UsageLimits, UsageTotals
from ..errors import FrameworkNotSupportedError, UsageLimitExceededError
from ..models._request_tokens import request_tokens

__all__ = ["RunBudget", "SessionBudget", "check_priceable", "crossed"]

_PROJECTED = ("input_tokens", "total_tokens")  # a call's input is known before it is sent


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionBudget:
    """A session's limits and what it had used when its turn opened (its stored totals)."""

    limits: UsageLimits | None
    spent: UsageTotals


def crossed(limits: UsageLimits | None, spent: UsageTotals, next_input: int) -> str | None:
    """The first limit the next call (with ``next_input`` input tokens) would cross, with the
    figures, as a sentence; ``None`` when it crosses none (see the module docstring)."""
    if limits is None:
        return None
    for name, limit in limits.given().items():
        if name == "requests" and spent.requests + 1 > limit:
            return f"requests: {spent.requests:,} made, the limit is {int(limit):,}"
        if name in _PROJECTED:
            used = getattr(spent, name)
            if used + next_input > limit:
                return (
                    f"{name}: {used:,} used + {next_input:,} in the next request = "
                    f"{used + next_input:,} > {limit:,}"
                )
        elif name != "requests":
            used = getattr(spent, name)
            if used is not None and used >= limit:
                figures = f"{_figure(name, used)} used, the limit {_figure(name, limit)}"
                return f"{name}: {figures} is reached"
    return None


def _figure(name: str, value: float) -> str:
    return f"${value:.6f}" if name == "cost_usd" else f"{int(value):,}"


def check_priceable(limits: UsageLimits | None, model: str, *, where: str) -> None:
    """Refuse a ``cost_usd`` limit for a model litellm's cost map has no price for.

    Raises:
        FrameworkNotSupportedError: the limit could cover only part of the run.
    """
    if limits is None or limits.cost_usd is None:
        return
    from ..models._pricing import model_prices

    if model_prices(model) is None:
        raise FrameworkNotSupportedError(
            f"{where}: a cost_usd limit needs the model's price, and litellm's cost map has "
            f"none for {model!r}; nothing was sent. Use a model the map prices, or limit "
            "tokens or requests instead."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunBudget:
    """A run's limits, its session's, and what the run has used so far: its totals, and its
    usage as its result reports it (see the module docstring). Each completed call gives a
    new budget (:meth:`after`)."""

    run: UsageLimits | None = None
    session: SessionBudget | None = None
    spent: UsageTotals = field(default_factory=UsageTotals)
    usage: Usage = field(default_factory=Usage)  # the run's, as its result reports it

    @property
    def active(self) -> bool:
        """Some limit is set."""
        return bool(self.run and self.run.given()) or bool(
            self.session and self.session.limits and self.session.limits.given()
        )

    @property
    def counts_input(self) -> bool:
        """A limit needs the next request's token count."""
        every = [self.run, self.session.limits if self.session else None]
        return any(
            getattr(limits, name) is not None for limits in every if limits for name in _PROJECTED
        )

    def after(self, usage: Usage) -> RunBudget:
        """The budget once a call with ``usage`` completed."""
        return replace(self, spent=self.spent.plus(usage), usage=self.usage + usage)

    async def check_request(self, params: dict[str, Any]) -> None:
        """:meth:`check` the built request ``params``: its model must have a price for a cost
        limit; its input tokens are counted (off the event loop) when a limit needs them."""
        if not self.active:
            return
        self.check_model(params["model"])  # a prepare_step may have chosen another model
        if self.counts_input:
            self.check(await asyncio.to_thread(request_tokens, params))

    def check(self, next_input: int = 1) -> None:
        """Refuse the next call when it would cross a limit.

        Raises:
            UsageLimitExceededError: it would (nothing is sent).
        """
        reason = crossed(self.run, self.spent, next_input)
        if reason is not None:
            raise _exceeded("run", reason, "usage_limits")
        if self.session is not None:
            reason = crossed(self.session.limits, self.session.spent + self.spent, next_input)
            if reason is not None:
                raise _exceeded("session", reason, "session_limits")

    def check_model(self, model: str) -> None:
        """Refuse a ``cost_usd`` limit for a call to a model that has no price."""
        check_priceable(self.run, model, where="usage_limits")
        check_priceable(
            self.session.limits if self.session else None, model, where="session_limits"
        )


def _exceeded(scope: str, reason: str, option: str) -> UsageLimitExceededError:
    limit = reason.split(":", 1)[0]
    return UsageLimitExceededError(
        f"The {scope}'s usage limit on {limit} stops it before the next model call ({reason}); "
        f"nothing was sent for that call. Raise the limit ({option}=hs.UsageLimits(...)) to go "
        "on.",
        limit=limit,
        scope=scope,
    )
