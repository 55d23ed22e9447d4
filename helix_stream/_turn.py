"""One turn of one session: what ``Executor.run`` sets going.

A turn binds the session scope (``define_state``, ``current_session``) around the code it runs
for the session, settles calls a paused turn left waiting, runs the loop with the context pass
first in the chain, persists each finished step (its messages and a checkpoint holding the
state snapshot, in one transaction), and reports lifecycle events to ``define_hook`` handlers
after each is durably recorded. See :mod:`helix_stream.hooks` for the failure policy.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator, Sequence
from contextlib import AbstractContextManager, aclosing
from typing import Any, Literal

import anyio

from ._pending import check_answerable, settle_waiting_calls, waiting_calls
from .agent import Agent
from .chunks import Chunk, ContextRowChunk, ContextSkipped, ErrorChunk
from .context import ContextItemLike, ContextPass, validate_items
from .errors import HelixError, HookError, SessionBusyError
from .hooks import HookContext, LifecycleEvent, dispatch
from .loop import StepResult, ToolCall
from .loop._run import LoopConfig, RunState, run_loop
from .middleware import StepInput
from .state import AuthInfo, ParentInfo, SessionInfo, SessionScope, TurnInfo, bind_scope
from .store import Checkpoint, LogRecord, SessionRecord, Store
from .tools import FINISH_TOOL_NAME, Tool, ToolContext

__all__ = ["Turn"]

log = logging.getLogger("helix_stream.context")
hook_log = logging.getLogger("helix_stream.hooks")


class Turn:
    """Runs one turn; ``chunks()`` is the generator behind the turn's StreamTextResult."""

    def __init__(
        self,
        *,
        store: Store,
        agent: Agent,
        session_id: str,
        message: dict[str, Any] | None,
        config: LoopConfig,
        state: RunState,
        contexts: dict[str, Any],
        auth: Any = None,
        parent: ParentInfo | None = None,
        executor: Any = None,
    ) -> None:
        self.store = store
        self.agent = agent
        self.session_id = session_id
        self.message = message
        self.config = config
        self.state = state
        self.contexts = contexts
        self.context_pass = ContextPass(
            store,
            session_id,
            step_context=agent.step_context,
            limits=agent.step_context_limits,
            memory=agent.memory,
        )
        self.auth = auth
        self.parent = parent
        # Filled in once the session is read (turn sequence, initiator); see _begin().
        self.scope = SessionScope(
            info=SessionInfo(id=session_id, turn=TurnInfo(id="", sequence=0)), executor=executor
        )
        self._event_seq = 0
        self._in_loop = False
        config.bind = self.bind
        config.make_tool_context = self.tool_context
        config.gate = self.gate
        # The context pass runs first, before every model call; then the step events; then
        # the agent's own prepare_step chain.
        config.prepare_step = [self.context_pass, self._step_events, *config.prepare_step]
        config.on_step_finish = [self.persist, *config.on_step_finish]

    # -- bindings the loop uses -------------------------------------------------------------

    def bind(self) -> AbstractContextManager[None]:
        return bind_scope(self.scope)

    async def gate(self, call: ToolCall) -> Literal["tool_inactive"] | None:
        # Active tools as folded from the log at this step's model call. __finish__ can never
        # be switched off (validation refuses it), so forced completion can always call it.
        if call.name != FINISH_TOOL_NAME and call.name in self.context_pass.fold.inactive:
            return "tool_inactive"
        return None

    def tool_context(self, call: ToolCall, tool: Tool, context: Any) -> ToolContext:
        async def add(items: Sequence[ContextItemLike], position: int) -> int:
            # A tool's items always carry source "tool"; a re-run of the same call site (same
            # call id, same position) records nothing: first wins, never refused.
            clean = validate_items(items, forced_source="tool")
            for item in clean:
                if item.get("enable"):
                    log.warning(
                        "core.context.enable_ignored: tool %r may switch tools off, never on; "
                        "its enable of %s has no effect",
                        tool.name,
                        item["enable"],
                        extra={
                            "event": "core.context.enable_ignored",
                            "session_id": self.session_id,
                        },
                    )
            return await self.store.enqueue_context(
                self.session_id,
                clean,
                source="tool",
                origin={
                    "type": "tool",
                    "tool_call_id": call.id,
                    "tool_name": tool.name,
                    "position": position,
                },
                key=f"call:{call.id}:{position}",
                on_key_conflict="ignore",
            )

        return ToolContext(
            context=context,
            tool_call_id=call.id,
            tool_name=tool.name,
            session=self.scope.info,
            _add_context=add,
        )

    async def persist(self, step: StepResult) -> None:
        """Append the step's messages and a checkpoint (with the state snapshot) at once."""
        statuses = {r.tool_call_id: r.status for r in step.tool_results}
        records: list[dict[str, Any]] = []
        for m in step.response_messages:
            # Bookkeeping keys start with "_" and are stripped before the model sees them.
            if m["role"] == "assistant":
                records.append({**m, "_message_id": self.config.message_id})
            else:
                records.append({**m, "_status": statuses.get(m.get("tool_call_id", ""), "output")})
        checkpoint = Checkpoint(
            id="",
            session_id=self.session_id,
            step_number=step.step_number,
            log_seq=0,
            state={
                "slots": dict(self.scope.state),
                "inactive": sorted(self.context_pass.fold.inactive),
            },
            created_at=0.0,
        )
        await self.store.append_messages(self.session_id, records, checkpoint=checkpoint)
        await self.event("message.completed", {"step": step.step_number, "text": step.text})
        for result in step.tool_results:
            # A call the gate refused ran nothing of its tool — no after-tool hook either
            # (reference 000, "Switching tools off and on").
            if result.status not in ("pending", "not_executed"):
                await self.event(
                    "action.result",
                    {
                        "tool_call_id": result.tool_call_id,
                        "tool_name": result.tool_name,
                        "status": result.status,
                    },
                )
        await self.event(
            "step.completed", {"step": step.step_number, "finish_reason": step.finish_reason}
        )

    async def _step_events(self, step: StepInput) -> None:
        """Step middleware after the context pass: its events, once its commit is durable."""
        rows = [c.row for c in step.emitted if isinstance(c, ContextRowChunk)]
        if rows:
            await self.event(
                "context.committed",
                {
                    "count": len(rows),
                    "kinds": [r.kind for r in rows],
                    "sources": [r.source for r in rows],
                },
            )
        for skipped in step.emitted:
            if isinstance(skipped, ContextSkipped):
                await self.event(
                    "context.skipped", {"reason": skipped.reason, "source": skipped.source}
                )
        await self.event("step.started", {"step": step.step_number})

    # -- events -----------------------------------------------------------------------------

    async def event(self, type: str, data: dict[str, Any] | None = None) -> None:
        """Dispatch an event to the agent's hooks (raises HookError if a handler raises)."""
        if not self.agent.hooks:
            return
        self._event_seq += 1
        seq = self._event_seq

        def make_context(index: int) -> HookContext:
            async def add(items: Sequence[Any], position: int) -> int:
                clean = validate_items(items, default_source="app")
                return await self.store.enqueue_context(
                    self.session_id,
                    clean,
                    source="app",
                    origin={"type": "hook", "event": type},
                    # turn.sequence, not turn.id: a turn that resumes a paused one shares its id.
                    key=f"hook:{self.scope.info.turn.sequence}:{seq}:{index}:{position}",
                    on_key_conflict="ignore",
                )

            return HookContext(session=self.scope.info, _add=add)

        with self.bind():
            await dispatch(
                self.agent.hooks, LifecycleEvent(type=type, data=data or {}), make_context
            )

    async def _failure_event(self, type: str, data: dict[str, Any]) -> bool:
        """Dispatch a failure event; True if a handler raised (escalate to session.failed)."""
        try:
            await self.event(type, data)
        except HookError as exc:
            hook_log.error("a %s hook raised; escalating to session.failed: %s", type, exc.error)
            return True
        return False

    # -- the run ----------------------------------------------------------------------------

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        state, store, sid = self.state, self.store, self.session_id
        try:
            existing = await store.get_session(sid)
            log = await store.read_log(sid) if existing else []
            waiting = waiting_calls(log)
            # Refuse before anything is written: a paused turn that cannot be settled yet.
            check_answerable(
                waiting,
                existing.meta if existing else {},
                self.config.tools,
                has_new_input=self.message is not None,
                client_tool_timeout=self.agent.client_tool_timeout,
            )
            parent_meta = {"parent": _parent_meta(self.parent)} if self.parent else {}
            await store.create_session(
                sid,
                agent_name=self.agent.name,
                parent_id=self.parent.session_id if self.parent else None,
                meta={"initiator": self.auth, **parent_meta},
            )
            if not await store.set_status(sid, "running", expect=("idle", "paused", "failed")):
                raise SessionBusyError(
                    f"session {sid!r} is already running; wait for its turn to end"
                )
        except HelixError as exc:
            state.error, state.done, state.finish_reason = exc, True, "error"
            yield ErrorChunk(error=exc)
            return
        try:
            if not waiting and self.message is not None:
                await store.append_messages(sid, [self.message])
            session = await self._begin(waiting)
            if existing is None:
                await self.event("session.started", {"agent": self.agent.name})
            if waiting:
                self.config.preamble = lambda: self._settle(waiting, session.meta, log)
            await self.event("turn.started", {"turn": self.scope.info.turn.sequence})
            self._in_loop = True
            async with aclosing(run_loop(self.config, state, self.contexts)) as chunks:
                async for chunk in chunks:
                    yield chunk
        except HookError as exc:  # a turn.started / session.started handler raised
            state.error, state.done, state.finish_reason = exc, True, "error"
            yield ErrorChunk(error=exc)
        finally:
            # Shielded: under anyio (sse-starlette, Starlette) a cancelled request cancels every
            # later await too, and the session must still end consistent (not "running").
            with anyio.CancelScope(shield=True):
                await self._finish()

    async def _settle(
        self, waiting: Sequence[Any], meta: dict[str, Any], log: Sequence[LogRecord]
    ) -> AsyncGenerator[Chunk, None]:
        settle = settle_waiting_calls(
            store=self.store,
            session_id=self.session_id,
            log=log,
            waiting=waiting,
            meta=meta,
            tools=self.config.tools,
            contexts=self.contexts,
            make_context=self.tool_context,
            recorder=self.config.recorder,
            client_tool_timeout=self.agent.client_tool_timeout,
            bind=self.bind,
        )
        async with aclosing(settle) as chunks:
            async for chunk in chunks:
                yield chunk
        if self.message is not None:
            # After the waiting calls have their results, so the log stays a valid conversation.
            await self.store.append_messages(self.session_id, [self.message])
        # The turn's model calls start here: a retry of its first step keeps the settled calls.
        start = await self.store.last_seq(self.session_id)
        await self.store.update_session_meta(self.session_id, {"turn_start_seq": start})

    async def _begin(self, waiting: Sequence[Any]) -> SessionRecord:
        """Count the turn, fix its message id, build the session info, restore the state."""
        sid = self.session_id
        if self.config.message_id is None:
            # A turn that settles a paused turn's calls continues that turn's UI message.
            resumed = waiting[0].message_id if waiting and self.message is None else None
            self.config.message_id = resumed or f"msg-{uuid.uuid4().hex[:16]}"
        session = await self.store.get_session(sid)
        assert session is not None
        turns = int(session.meta.get("turns", 0)) + 1
        # Where this turn starts in the log (after its user message): a retry of a turn whose
        # first step failed rewinds to here (reference 000, "Rewinds and branches").
        start = await self.store.last_seq(sid)
        session = await self.store.update_session_meta(
            sid, {"turns": turns, "turn_start_seq": start}
        )
        turn = TurnInfo(id=self.config.message_id, sequence=turns)
        self.scope.info = SessionInfo(
            id=sid,
            turn=turn,
            auth=AuthInfo(current=self.auth, initiator=session.meta.get("initiator")),
            parent=self.parent,
        )
        checkpoints = await self.store.checkpoints(sid)
        if checkpoints:
            self.scope.state.update(checkpoints[-1].state.get("slots", {}))
        return session

    async def _finish(self) -> None:
        state, sid = self.state, self.session_id
        if state.error is not None:
            await self.store.set_status(sid, "failed")
            data = {"error": type(state.error).__name__, "code": getattr(state.error, "code", None)}
            escalate = False
            if self._in_loop:
                escalate |= await self._failure_event("step.failed", data)
            escalate |= await self._failure_event("turn.failed", data)
            if escalate:
                await self._failure_event("session.failed", data)
            return
        if not state.done:  # closed by the consumer (a client went away): consistent, idle
            await self.store.set_status(sid, "idle")
            return
        try:
            if state.steps and state.steps[-1].pending:
                await self.store.update_session_meta(sid, {"paused_at": time.time()})
                await self.store.set_status(sid, "paused")
                await self.event(
                    "session.waiting",
                    {"pending": [r.tool_call_id for r in state.steps[-1].pending]},
                )
            else:
                await self.store.set_status(sid, "idle")
                await self.event("turn.completed", {"finish_reason": state.finish_reason})
                if state.output is not None:
                    await self.event("session.completed", {"output": state.output})
        except HookError as exc:
            await self.store.set_status(sid, "failed")
            if await self._failure_event("turn.failed", {"error": str(exc)}):
                await self._failure_event("session.failed", {"error": str(exc)})


def _parent_meta(parent: ParentInfo) -> dict[str, Any]:
    return {
        "call_id": parent.call_id,
        "session_id": parent.session_id,
        "root_session_id": parent.root_session_id,
        "turn": {"id": parent.turn.id, "sequence": parent.turn.sequence},
    }
