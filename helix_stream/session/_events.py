"""Lifecycle events of one turn, dispatched to the agent's ``define_hook`` handlers.

A turn calls :meth:`TurnEvents.emit` right after the store write that records the event has
committed. Handlers run inside the session scope and may queue context (source ``app``).

**Call sites.** A handler's ``add_context`` is first-wins per call site, as a tool's is: a
re-run of the same handler for the same event of the same turn queues nothing twice — when a
turn that failed is retried, or one whose process died is recovered. A call site is the turn
(its sequence, which a turn keeps for its whole life), where the event happened — for a
step's events (``step.*``, ``message.completed``, ``action.result``, ``context.*``) the log
position of the checkpoint the step started from, for the turn's own events the position the
turn's current part started from (:attr:`~._meta.TurnMeta.part`) —, the event's type and how
many of that type came before it there, the handler's place in the dispatch order and the
``add_context`` call's place in the handler. A re-run starts from the same checkpoint as the
run it repeats, so its call sites are the same; a turn that resumes after a pause starts a new
part, whose handlers queue again. The
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
from ..hooks import (
    STEP_EVENTS,
    AgentInfo,
    ChannelInfo,
    Hook,
    HookContext,
    dispatch,
    lifecycle_event,
)
from ..state import SessionScope, bind_scope
from ..store import Store
from ._sandbox import TurnSandbox

__all__ = ["TurnEvents"]

logger = logging.getLogger("helix_stream.hooks")


class TurnEvents:
    """The event dispatcher of one turn.

    Args:
        hooks: The agent's hooks.
        store: Where a handler's context items are queued.
        scope: The turn's session scope (bound while handlers run).
        sandbox: The agent's sandbox and skills (``ctx.get_sandbox()``, ``ctx.get_skill()``).
        agent: The agent (``ctx.agent``).
        channel: Where the turn came in (``ctx.channel``).
        part: Where the turn's current part started (the log position of a checkpoint).
        checkpoint: The log position of the session's last checkpoint (0: none).
    """

    def __init__(
        self,
        hooks: Sequence[Hook],
        store: Store,
        scope: SessionScope,
        *,
        sandbox: TurnSandbox,
        agent: AgentInfo,
        channel: ChannelInfo,
        part: int,
        checkpoint: int,
    ) -> None:
        self._hooks = hooks
        self._store = store
        self._scope = scope
        self._sandbox = sandbox
        self._agent = agent
        self._channel = channel
        self._part = part
        self._step_site = checkpoint
        self._counts: dict[tuple[int, str], int] = {}
        self.queued = 0  # items handlers queued so far (the turn commits them before a call)

    def checkpointed(self, log_seq: int) -> None:
        """A step's checkpoint was written at ``log_seq``: the next step starts from it."""
        self._step_site = log_seq

    def _call_site(self, type: str) -> str:
        site = self._step_site if type in STEP_EVENTS else self._part
        count = self._counts.get((site, type), 0)
        self._counts[(site, type)] = count + 1
        return f"hook:{self._scope.info.turn.sequence}:{site}:{type}:{count}"

    async def emit(self, type: str, data: dict[str, Any] | None = None) -> None:
        """Dispatch an event (raises :class:`HookError` if a handler raises)."""
        if not self._hooks:
            return
        call_site = self._call_site(type)
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
                    key=f"{call_site}:{index}:{position}",
                    on_key_conflict="ignore",
                )
                self.queued += recorded
                return recorded

            return HookContext(
                session=scope.info,
                agent=self._agent,
                channel=self._channel,
                _add=add,
                _sandbox=self._sandbox.get,
                _skill=self._sandbox.skill,
            )

        with bind_scope(scope):
            await dispatch(self._hooks, lifecycle_event(type, data), make_context)

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
