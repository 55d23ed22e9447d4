"""A session's usage totals: kept in its store, judged when a turn opens, read by
``executor.usage``.

The totals (:class:`~helix_stream.UsageTotals`) live in the session's ``meta`` under the
engine's reserved key ``helix.usage``: each finished step's write (``TurnLog.persist``) sets
them to what they were when the turn opened plus the turn's calls so far, in the same
transaction as the step's messages. So they need nothing of a store beyond what every store
keeps, survive restarts, and count what was spent: a rewind leaves them as they are, a branch
starts from its source's (it copies the meta).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._usage_limits import UsageTotals
from ..errors import FrameworkNotSupportedError, SessionNotFoundError
from ..loop._budget import RunBudget, SessionBudget, check_priceable
from ..loop._request import model_name
from ..models._litellm import ensure_litellm
from ..store import Snapshot, Store
from ._request import TurnRequest

__all__ = ["USAGE_KEY", "check_budget", "session_budget", "session_usage", "stored_usage"]

USAGE_KEY = "helix.usage"


def stored_usage(meta: Mapping[str, Any] | None) -> UsageTotals:
    """The totals a session's ``meta`` keeps (zeros before its first step)."""
    return UsageTotals.from_json((meta or {}).get(USAGE_KEY))


def session_budget(request: TurnRequest, snapshot: Snapshot) -> SessionBudget:
    """The session's limits (the agent's ``session_limits``) and its stored totals."""
    meta = snapshot.session.meta if snapshot.session is not None else None
    return SessionBudget(limits=request.agent.session_limits, spent=stored_usage(meta))


async def check_budget(request: TurnRequest, budget: SessionBudget) -> None:
    """Refuse, before anything is written, a turn whose first model call a limit stops
    already, and a ``cost_usd`` limit for a model that has no price.

    Raises:
        UsageLimitExceededError: a limit is reached (``loop/_budget.py``).
        FrameworkNotSupportedError: a cost limit for a model litellm cannot price.
    """
    run = request.setup.options.usage_limits
    both = RunBudget(run=run, session=budget)
    if not both.active:
        return
    if (run is not None and run.cost_usd is not None) or (
        budget.limits is not None and budget.limits.cost_usd is not None
    ):
        await ensure_litellm()
        model = model_name(request.setup.call.model)[0]
        check_priceable(run, model, where="usage_limits")
        check_priceable(budget.limits, model, where="session_limits")
        limits = budget.limits
        if limits is not None and limits.cost_usd is not None and budget.spent.cost_usd is None:
            raise FrameworkNotSupportedError(
                f"session {request.session_id!r}: a cost_usd limit, and the session has calls "
                "litellm's cost map could not price, so its spend is unknown; nothing was "
                "sent. Limit tokens or requests instead."
            )
    both.check()


async def session_usage(store: Store, session_id: str) -> UsageTotals:
    """The session's totals (``executor.usage``).

    Raises:
        SessionNotFoundError: no such session (nothing is written).
    """
    session = await store.get_session(session_id)
    if session is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    return stored_usage(session.meta)
