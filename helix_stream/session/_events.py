"""A turn's durable events on the run's one event stream, and the agent's hooks as their
subscriber.

:class:`TurnEvents` emits each event once, as a :class:`~helix_stream._event_stream.SessionEvent`
on the turn's stream (the one its run uses: :func:`~helix_stream.loop._run.run_event_stream`),
right after the store write that records it has committed; it builds nothing for a kind no
subscriber wants. :class:`HookSubscriber` delivers them to the agent's ``define_hook``
handlers, inside the session scope; a handler may queue context (source ``app``).

**Call sites.** A handler's ``add_context`` is first-wins per call site, as a tool's is: a
re-run of the same handler for the same event of the same turn queues nothing twice — when a
turn that failed is retried, or one whose process died is recovered. An event's ``site`` is
the turn (its sequence, which a turn keeps for its whole life), where the event happened —
for a step's events (``step.*``, ``message.completed``, ``action.result``, ``context.*``) the
log position of the checkpoint the step started from, for the turn's own events the position
the turn's current part started from (:attr:`~._meta.TurnMeta.part`) —, the event's type and
how many of that type came before it there; a call site adds the handler's place in the
dispatch order and the ``add_context`` call's place in the handler. A re-run starts from the
same checkpoint as the run it repeats, so its call sites are the same; a turn that resumes
after a pause starts a new part, whose handlers queue again.

**Failure policy** (README, "Durable sessions", its **Hooks**): the hooks subscribe with the
``"fail"`` policy — a raising handler fails the turn (:class:`HookError`, once every handler
saw the event); a raising handler of a failure event escalates to ``session.failed``, whose
own errors are logged and go no further (:meth:`TurnEvents.failure`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from typing import Any

from .._event_stream import (
    EventStream,
    FunctionSubscriber,
    Policy,
    RunEvent,
    SessionEvent,
    SessionEventKind,
    StepEnded,
    Subscriber,
)
from ..context import APP_SOURCE, validate_items
from ..errors import HookError
from ..hooks import (
    EVENTS,
    STEP_EVENTS,
    AgentInfo,
    ChannelInfo,
    Hook,
    HookContext,
    dispatch,
    lifecycle_event,
)
from ..state import SessionScope, bind_scope
from ..steps import StepResult, ToolResult
from ..store import Store
from ._parking import Parking
from ._sandbox import TurnSandbox

__all__ = ["HookSubscriber", "TurnEvents"]

logger = logging.getLogger("helix_stream.hooks")


class HookSubscriber:
    """The agent's hooks as a subscriber of the turn's event stream (policy ``"fail"``).

    Args:
        hooks: The agent's hooks.
        store: Where a handler's context items are queued.
        scope: The turn's session scope (bound while handlers run).
        sandbox: The agent's sandbox and skills (``ctx.get_sandbox()``, ``ctx.get_skill()``).
        agent: The agent (``ctx.agent``).
        channel: Where the turn came in (``ctx.channel``).
    """

    policy: Policy = "fail"

    def __init__(
        self,
        hooks: Sequence[Hook],
        store: Store,
        scope: SessionScope,
        *,
        sandbox: TurnSandbox,
        agent: AgentInfo,
        channel: ChannelInfo,
    ) -> None:
        self._hooks = hooks
        self._store = store
        self._scope = scope
        self._sandbox = sandbox
        self._agent = agent
        self._channel = channel
        names = {name for hook in hooks for name in hook.handlers}
        # The kinds some handler wants (a "*" handler wants them all): no other is built.
        self.kinds: frozenset[str] = frozenset(EVENTS if "*" in names else names)
        self.queued = 0  # items handlers queued so far (the turn commits them before a call)

    async def handle(self, event: RunEvent) -> None:
        """Run the handlers of ``event`` (raises :class:`HookError` if one raised)."""
        assert isinstance(event, SessionEvent)  # the only kinds it subscribes to
        kind, call_site, scope = event.kind, f"hook:{event.site}", self._scope

        def make_context(index: int) -> HookContext:
            async def add(items: Sequence[Any], position: int) -> int:
                # A lifecycle hook acts for the app: its rows are "app" rows (the source "hook"
                # is the step_context hook's); the origin says which event's handler it was.
                clean = validate_items(items, default_source=APP_SOURCE)
                recorded = await self._store.enqueue_context(
                    scope.info.id,
                    clean,
                    source=APP_SOURCE,
                    origin={"type": "hook", "event": kind},
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
            await dispatch(self._hooks, lifecycle_event(kind, event.data), make_context)


class TurnEvents:
    """The emitter of one turn's durable events onto its event stream.

    Args:
        session_id: The session.
        turn: The turn's sequence.
        part: Where the turn's current part started (the log position of a checkpoint).
        checkpoint: The log position of the session's last checkpoint (0: none).
        parking: The turn's calls parked on a sign-in (``session.waiting`` names them).
        finish_tool: The tool whose successful call completes the session, if any.
        stream: Makes the turn's event stream, given what the emitter subscribes to it
            (the run's ``step-ended``, which it reports as the step's events).
    """

    def __init__(
        self,
        session_id: str,
        *,
        turn: int,
        part: int,
        checkpoint: int,
        parking: Parking,
        finish_tool: str | None,
        stream: Callable[[Subscriber], EventStream],
    ) -> None:
        self._session_id = session_id
        self._turn = turn
        self._part = part
        self._step_site = checkpoint
        self._counts: dict[tuple[int, str], int] = {}
        self._parking = parking
        self._finish_tool = finish_tool
        self.stream = stream(FunctionSubscriber(frozenset({"step-ended"}), "fail", self._ended))

    def checkpointed(self, log_seq: int) -> None:
        """A step's checkpoint was written at ``log_seq``: the next step starts from it."""
        self._step_site = log_seq

    def _site(self, kind: str) -> str:
        site = self._step_site if kind in STEP_EVENTS else self._part
        count = self._counts.get((site, kind), 0)
        self._counts[(site, kind)] = count + 1
        return f"{self._turn}:{site}:{kind}:{count}"

    async def emit(self, kind: SessionEventKind, data: dict[str, Any] | None = None) -> None:
        """Emit an event (raises :class:`HookError` if a hook handler raised)."""
        if not self.stream.wants(kind):
            return
        event = SessionEvent(
            kind=kind, session_id=self._session_id, data=data or {}, site=self._site(kind)
        )
        await self.stream.emit(event)

    async def failed(self, kind: SessionEventKind, data: dict[str, Any]) -> bool:
        """Emit a failure event; ``True`` if a handler raised (escalate to
        ``session.failed``)."""
        try:
            await self.emit(kind, data)
        except HookError as exc:
            logger.error(
                "a %s hook raised; escalating to session.failed: %s",
                kind,
                exc.error,
                extra={"session_id": self._session_id},
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

    async def _ended(self, event: RunEvent) -> None:
        assert isinstance(event, StepEnded)  # the only kind it subscribes to
        await self.step_ended(event.step, final=event.final)

    async def step_ended(self, step: StepResult, *, final: bool) -> None:
        """The events of a recorded step (and of the turn's end, for its last)."""
        if self.stream.wants("message.completed"):  # the copy only for a handler
            first = step.response_messages[0] if step.response_messages else None
            message = copy.deepcopy(first)
            data = {"step": step.step_number, "text": step.text, "message": message}
            await self.emit("message.completed", data)
        await self.action_results(step.tool_results)
        await self.emit(
            "step.completed", {"step": step.step_number, "finish_reason": step.finish_reason}
        )
        if not final:
            return
        if step.pending:
            pending = [r.tool_call_id for r in step.pending]
            await self.emit("session.waiting", self._parking.waiting_data(pending))
            return
        await self.emit("turn.completed", {"finish_reason": step.finish_reason})
        for result in step.tool_results:
            if result.tool_name == self._finish_tool and result.status == "output":
                await self.emit("session.completed", {"output": result.output})

    async def action_results(self, results: Sequence[ToolResult]) -> None:
        """``action.result`` for each call that ended (a step's, or a paused turn's settled
        ones, once their tool messages are written)."""
        for result in results:
            # A call the gate refused ran nothing of its tool: no after-tool hook either.
            if result.status not in ("pending", "not_executed"):
                await self.emit(
                    "action.result",
                    {
                        "tool_call_id": result.tool_call_id,
                        "tool_name": result.tool_name,
                        "status": result.status,
                        "result": result,
                        "output": result.output,
                        "error": result.error,
                    },
                )
