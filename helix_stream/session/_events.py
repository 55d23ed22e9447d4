"""Lifecycle events of one turn, dispatched to the agent's ``define_hook`` handlers.

A turn calls :meth:`TurnEvents.emit` right after the store write that records the event has
committed. Handlers run inside the session scope and may queue context (source ``app``); a
re-run of the same handler for the same event of the same turn queues nothing twice. The
failure policy (README, "Durable sessions", its **Hooks**): a raising handler fails the turn
(:class:`HookError`); a raising handler of a failure event escalates to ``session.failed``,
whose own errors are logged and go no further.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..context import APP_SOURCE, validate_items
from ..errors import HookError
from ..hooks import Hook, HookContext, LifecycleEvent, dispatch
from ..state import SessionScope, bind_scope
from ..store import Store

__all__ = ["TurnEvents"]

logger = logging.getLogger("helix_stream.hooks")


class TurnEvents:
    """The event dispatcher of one turn.

    Args:
        hooks: The agent's hooks.
        store: Where a handler's context items are queued.
        scope: The turn's session scope (bound while handlers run).
    """

    def __init__(self, hooks: Sequence[Hook], store: Store, scope: SessionScope) -> None:
        self._hooks = hooks
        self._store = store
        self._scope = scope
        self._count = 0
        self.queued = 0  # items handlers queued so far (the turn commits them before a call)

    async def emit(self, type: str, data: dict[str, Any] | None = None) -> None:
        """Dispatch an event (raises :class:`HookError` if a handler raises)."""
        if not self._hooks:
            return
        self._count += 1
        number = self._count
        scope = self._scope

        def make_context(index: int) -> HookContext:
            async def add(items: Sequence[Any], position: int) -> int:
                # A lifecycle hook acts for the app: its rows are "app" rows (the source "hook"
                # is the step_context hook's); the origin says which event's handler it was.
                clean = validate_items(items, default_source=APP_SOURCE)
                recorded = await self._store.enqueue_context(
                    scope.info.id,
                    clean,
                    source=APP_SOURCE,
                    origin={"type": "hook", "event": type},
                    # turn.sequence, not turn.id: a turn that resumes a paused one shares its id.
                    key=f"hook:{scope.info.turn.sequence}:{number}:{index}:{position}",
                    on_key_conflict="ignore",
                )
                self.queued += recorded
                return recorded

            return HookContext(session=scope.info, _add=add)

        with bind_scope(scope):
            await dispatch(self._hooks, LifecycleEvent(type=type, data=data or {}), make_context)

    async def failed(self, type: str, data: dict[str, Any]) -> bool:
        """Dispatch a failure event; ``True`` if a handler raised (escalate to
        ``session.failed``)."""
        try:
            await self.emit(type, data)
        except HookError as exc:
            logger.error(
                "a %s hook raised; escalating to session.failed: %s",
                type,
                exc.error,
                extra={"session_id": self._scope.info.id},
            )
            return True
        return False

    async def failure(self, data: dict[str, Any], *, in_step: bool) -> None:
        """The events of a failed turn: ``step.failed`` (when a step was running),
        ``turn.failed``, and ``session.failed`` if one of their handlers raised."""
        escalate = False
        if in_step:
            escalate |= await self.failed("step.failed", data)
        escalate |= await self.failed("turn.failed", data)
        if escalate:
            await self.failed("session.failed", data)
