"""The step_context hook: context from outside the session, before every model call.

``step_context(req)`` gets the session id and the cursor of the last batch that reached the log
and returns ``None`` (nothing new) or ``{"items": [...], "cursor": value}``. Its items become
rows with source ``hook`` in the context pass's transaction, each carrying the cursor.

A hook that raises, times out (it is cancelled at the limit) or returns something invalid is
*skipped*: no row, the cursor does not move, the run goes on, and the pass emits a
``context_skipped`` chunk and logs ``core.context.skipped``. A batch over ``max_bytes`` (its
JSON, cursor included) keeps the items that fit, in order, then one notice saying how many were
left out — and its cursor still advances.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..chunks import ContextSkipped
from ..errors import ContextValidationError
from ._items import STEP_CONTEXT_SOURCE, item_size, validate_items

__all__ = ["StepContextLimits", "StepContextRequest", "log_skipped", "run_step_context"]

logger = logging.getLogger("helix_stream.context")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepContextLimits:
    """Limits for the ``step_context`` hook: the batch's JSON size (cursor included) and the
    hook's run time in seconds.

    Example::

        async def ticket_feed(req: hs.StepContextRequest) -> dict[str, object] | None:
            return None

        agent = hs.Agent(name="support", model="helix/demo", step_context=ticket_feed,
                         step_context_limits=hs.StepContextLimits(max_bytes=16_384, timeout=2.0))
    """

    max_bytes: int = 32_768
    timeout: float = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class StepContextRequest:
    """What the step_context hook receives.

    Attributes:
        session_id: The session about to call the model.
        cursor: The cursor of the last batch that reached the log (``None`` at first).
        step_number: The step about to run.

    Cancellation is asyncio's: at the time limit the hook's ``await`` raises CancelledError.

    Example::

        async def ticket_feed(req: hs.StepContextRequest) -> dict[str, object] | None:
            updates = await ticket_updates(req.session_id, since=req.cursor or 0)
            if not updates:
                return None                              # nothing new this step
            items = [hs.notice(u.summary) for u in updates]
            return {"items": items, "cursor": updates[-1].sequence}
    """

    session_id: str
    cursor: Any = None
    step_number: int = 0


@dataclass(slots=True)
class HookOutcome:
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: ContextSkipped | None = None


def log_skipped(session_id: str, reason: str, source: str, detail: str = "") -> ContextSkipped:
    """Log ``core.context.skipped`` and return the chunk that says the same in the stream."""
    logger.warning(
        "core.context.skipped: %s skipped (%s)%s",
        source,
        reason,
        f": {detail}" if detail else "",
        extra={
            "event": "core.context.skipped",
            "session_id": session_id,
            "reason": reason,
            "source": source,
        },
    )
    return ContextSkipped(reason=reason, source=source)


def _batch_size(items: list[dict[str, Any]], cursor: Any) -> int:
    return item_size({"items": items, "cursor": cursor})


def _left_out_notice(left_out: int, total: int, max_bytes: int) -> dict[str, Any]:
    text = (
        f"{left_out} of {total} context items from the step_context hook were left out: "
        f"the batch was over its {max_bytes}-byte limit."
    )
    return {"kind": "notice", "content": text, "source": STEP_CONTEXT_SOURCE}


def _fit(items: list[dict[str, Any]], cursor: Any, max_bytes: int) -> list[dict[str, Any]]:
    """The longest prefix of ``items`` that fits with the notice counting the rest."""
    kept = list(items)
    while kept:
        batch = [*kept, _left_out_notice(len(items) - len(kept), len(items), max_bytes)]
        if _batch_size(batch, cursor) <= max_bytes:
            return batch
        kept.pop()
    # Not even one item fits beside the notice: the notice alone (it carries the cursor).
    return [_left_out_notice(len(items), len(items), max_bytes)]


async def run_step_context(
    hook: Callable[[StepContextRequest], Any],
    request: StepContextRequest,
    limits: StepContextLimits,
) -> HookOutcome:
    """Call the hook within its limits; return its rows, or the skip."""
    sid = request.session_id
    try:
        async with asyncio.timeout(limits.timeout):
            out = hook(request)
            if inspect.isawaitable(out):
                out = await out
    except TimeoutError:
        return HookOutcome(
            skipped=log_skipped(sid, "timeout", STEP_CONTEXT_SOURCE, f"over {limits.timeout}s")
        )
    except Exception as exc:
        return HookOutcome(
            skipped=log_skipped(sid, "error", STEP_CONTEXT_SOURCE, f"{type(exc).__name__}: {exc}")
        )
    if out is None:
        return HookOutcome()
    try:
        if (
            not isinstance(out, Mapping)
            or not set(out) <= {"items", "cursor"}
            or "items" not in out
        ):
            raise ContextValidationError(
                "the hook must return None or {'items': [...], 'cursor': value}"
            )
        items = validate_items(out["items"], forced_source=STEP_CONTEXT_SOURCE)
        cursor = out.get("cursor")
        json.dumps(cursor, allow_nan=False)
    except (ContextValidationError, TypeError, ValueError) as exc:
        return HookOutcome(skipped=log_skipped(sid, "invalid", STEP_CONTEXT_SOURCE, str(exc)))
    if not items:
        return HookOutcome()
    kept = items
    if _batch_size(items, cursor) > limits.max_bytes:
        kept = _fit(items, cursor, limits.max_bytes)
    has_cursor = "cursor" in out
    return HookOutcome(rows=[{**item, "cursor": cursor} if has_cursor else item for item in kept])
