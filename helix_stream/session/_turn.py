"""One turn of one session: what ``Executor.run`` sets going.

A turn reads its session **once** (a :class:`~helix_stream.store.Snapshot`), refuses what
cannot run before anything is written, and then writes only at its boundaries, one
transaction each:

1. **open**: the first commit claims the session (``running``, a compare-and-set, creating it
   on first use) together with the user's message and the first context pass (the queue, the
   step_context hook's rows, the memory row). A turn that settles a paused one's calls claims
   first, alone, because approved calls run before its first commit;
2. **each step**: its messages and a checkpoint (the define_state snapshot); the last step
   also sets the new status (``idle``, or ``paused`` for answers);
3. only when a turn fails or is cut short: its status (``failed`` or ``idle``).

Between those the turn takes part in the loop as its :class:`~helix_stream.loop._config.
SessionLink`: it commits the context before each further model call, gates tool calls, gives
tools their context and session, and reports lifecycle events to the agent's hooks after each
is durably recorded.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractContextManager, aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._messages import message_text
from ..chunks import (
    Chunk,
    ContextRowChunk,
    DataChunk,
    ErrorChunk,
    Finish,
    FinishStep,
    SourceUrl,
    StartStep,
    TextDelta,
)
from ..context import ContextPass, ContextRow, Gathered, validate_items
from ..errors import HelixError, SessionBusyError, SessionNotFoundError
from ..loop._config import GateReason, LoopConfig, StepContext
from ..loop._run import run_loop
from ..loop._step import model_name
from ..models._family import params_family
from ..state import AuthInfo, ParentInfo, SessionInfo, SessionScope, TurnInfo, bind_scope
from ..steps import StepResult, ToolCall
from ..store import Checkpoint, NewSession, SessionStatus, Snapshot, TurnWrite
from ..tools import FINISH_TOOL_NAME, Tool, ToolContext
from ._answers import ApprovalAnswer, ToolAnswer
from ._events import TurnEvents
from ._finish import finish_turn, log_failure
from ._meta import TurnMeta
from ._pending import Settlement, check_answerable
from ._view import SessionView

if TYPE_CHECKING:
    from ..agent import Agent
    from ._executor import Executor

__all__ = ["Turn"]

logger = logging.getLogger("helix_stream.context")

_RUNNABLE: tuple[SessionStatus, ...] = ("idle", "paused", "failed")


class Turn:
    """One turn; :meth:`chunks` is the generator behind the turn's ``StreamTextResult``."""

    def __init__(
        self,
        *,
        executor: Executor,
        agent: Agent,
        session_id: str,
        message: dict[str, Any] | None,
        config: LoopConfig,
        answers: Sequence[ApprovalAnswer | ToolAnswer],
        auth: Any,
        parent: ParentInfo | None,
    ) -> None:
        self.store = executor.store
        self.executor = executor
        self.agent = agent
        self.session_id = session_id
        self.message = message
        self.config = config
        self.answers = answers
        self.auth = auth
        self.parent = parent
        self.scope = SessionScope(
            info=SessionInfo(id=session_id, turn=TurnInfo(id="", sequence=0)), executor=executor
        )
        self.events = TurnEvents(agent.hooks, self.store, self.scope)
        self.view: SessionView | None = None
        self.context_pass = ContextPass(session_id, ())
        self.meta = TurnMeta()
        self.created = False
        self.first: StepContext | None = None  # step 0's commit, made when the turn opened
        self.settlement: Settlement | None = None
        self.in_step = False
        self.partial: list[str] = []  # the text the current step has streamed so far
        self.written: list[dict[str, Any]] = []  # the data parts its tools wrote (kept ones)
        self.sources: list[dict[str, Any]] = []  # the sources its model cited
        self.error: BaseException | None = None  # the run's error, once it failed
        self.done = False  # the run finished
        self.claimed = False  # the session is ours: from here on, the turn must end it
        self.ended = False  # the last step's write set the final status

    # -- the run ------------------------------------------------------------------------------

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        try:
            await self._open()
        except Exception as exc:
            if self.claimed:
                await finish_turn(self, error=exc, done=False)
            elif not isinstance(exc, HelixError):
                log_failure(self, exc)  # a refusal is the caller's business; this is not
            yield ErrorChunk(error=exc)  # before the claim: nothing was written
            return
        try:
            async with aclosing(run_loop(self.config)) as chunks:
                async for chunk in chunks:
                    self._see(chunk)
                    yield chunk
        finally:
            await finish_turn(self, error=self.error, done=self.done)

    def _see(self, chunk: Chunk) -> None:
        """Keep what the turn stores besides the step's messages: the text streamed so far
        (an interrupted answer), the tools' data parts and the cited sources; and how the run
        ended."""
        cls = chunk.__class__
        if cls is TextDelta:
            self.partial.append(chunk.delta)  # type: ignore[union-attr]
        elif cls is StartStep:
            self.partial, self.written, self.sources = [], [], []
        elif cls is FinishStep:
            self.partial = []
        elif isinstance(chunk, DataChunk):
            if not chunk.transient:
                self.written.append({"name": chunk.name, "id": chunk.id, "data": chunk.data})
        elif isinstance(chunk, SourceUrl):
            self.sources.append(
                {"sourceId": chunk.source_id, "url": chunk.url, "title": chunk.title}
            )
        elif isinstance(chunk, ErrorChunk):
            self.error = chunk.error
        elif cls is Finish:
            self.done = True

    def interrupted_message(self) -> dict[str, Any] | None:
        """The text the current step streamed before the turn failed or was cut short, as
        the assistant message to store (what the user saw is what is stored)."""
        text = "".join(self.partial)
        if not text or self.ended:
            return None
        return {
            "role": "assistant",
            "content": text,
            "_message_id": self.config.message_id,
            "_interrupted": True,
        }

    async def _open(self) -> None:
        """Read the session once, refuse what cannot run, and claim the session."""
        snapshot = await self.store.read_snapshot(self.session_id)
        view = SessionView(snapshot, self.agent, self.answers)
        self.view = view
        if snapshot.session is None and self.message is None:
            raise SessionNotFoundError(
                f"no session {self.session_id!r} to continue; start it with a user message"
            )
        status = snapshot.session.status if snapshot.session else "idle"
        if status not in _RUNNABLE:
            raise _busy(self.session_id)
        check_answerable(
            view.waiting,
            view.answers,
            self.config.tools,
            has_new_input=self.message is not None,
            deadline=view.deadline,
        )
        self.context_pass = ContextPass(
            self.session_id,
            snapshot.log,
            step_context=self.agent.step_context,
            limits=self.agent.step_context_limits,
            memory=self.agent.memory,
            # Rows take the form of the provider family the turn's model is sent as.
            family=await params_family(
                model_name(self.config.model)[0], self.config.litellm_params
            ),
        )
        self._begin(snapshot, view)
        if view.waiting:
            await self._claim()
        else:
            self.first = await self._commit(0, claim=True)

    def _begin(self, snapshot: Snapshot, view: SessionView) -> None:
        """Fix the turn's message id and session info, restore the state, finish the config."""
        resumed = view.waiting[0].message_id if view.waiting and self.message is None else None
        message_id = self.config.message_id or resumed or f"msg-{uuid.uuid4().hex[:16]}"
        self.meta = replace(view.meta, turns=view.meta.turns + 1)
        self.created = snapshot.session is None
        initiator = self.auth_record() if self.created else view.meta.initiator
        self.scope.info = SessionInfo(
            id=self.session_id,
            turn=self.meta.turn_info(message_id),
            auth=AuthInfo(current=self.auth, initiator=initiator),
            parent=self.parent,
        )
        if snapshot.checkpoint is not None:
            self.scope.state.update(snapshot.checkpoint.state.get("slots", {}))
        self.config = replace(
            self.config,
            message_id=message_id,
            messages=tuple(self.context_pass.messages),
            session=self,
        )

    def auth_record(self) -> Any:
        """What of the caller is stored as the session's initiator (never credentials)."""
        return self.executor.identify(self.auth)

    def _new_session(self) -> NewSession:
        meta = TurnMeta.new_session(self.auth_record(), self.parent)
        return NewSession(
            agent_name=self.agent.name,
            parent_id=self.parent.session_id if self.parent else None,
            meta=meta,
        )

    async def _claim(self) -> None:
        """Claim the session alone (a turn that settles waiting calls first)."""
        patch = self.meta.starting_at(self._last_seq())
        result = await self.store.write_turn(
            self.session_id,
            TurnWrite(expect=_RUNNABLE, status="running", meta=patch),
        )
        if not result.applied:
            raise _busy(self.session_id)
        self.claimed = True

    async def _commit(
        self, step_number: int, *, claim: bool = False, gather: bool = True
    ) -> StepContext:
        """The context pass of one model call, committed in one write (see the module
        docstring); the first one also carries the settled calls and the user's message.
        Without ``gather``, only the queue is committed (the hook and memory have run)."""
        first = step_number == 0 and gather
        messages: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        if first and self.settlement is not None:
            settled = self.settlement.outcome()
            messages, rows = list(settled.messages), list(settled.rows)
        if first and self.message is not None:
            messages.append(self.message)
        user_text = message_text(self.message) if first and self.message else None
        gathered = Gathered()
        if gather:
            gathered = await self.context_pass.gather(step_number, user_text=user_text)
        write = TurnWrite(messages=messages, deliver_queue=True, rows=[*rows, *gathered.rows])
        if first:
            patch = self.meta.starting_at(self._last_seq() + len(messages))
            waiting = self.view.waiting if self.view else []
            patch.update(self.meta.settled([w.call.id for w in waiting]))
            write = replace(write, meta=patch)
        if claim:
            create = self._new_session() if self.created else None
            write = replace(write, create=create, expect=_RUNNABLE, status="running")
        result = await self.store.write_turn(self.session_id, write)
        if not result.applied:
            raise _busy(self.session_id)
        self.claimed = True
        return self._step_context(result.records, gathered)

    def _last_seq(self) -> int:
        log = self.view.snapshot.log if self.view else []
        return log[-1].seq if log else 0

    def _step_context(self, records: Sequence[Any], gathered: Gathered) -> StepContext:
        messages = self.context_pass.take(records)
        rows: list[Chunk] = [
            ContextRowChunk(row=ContextRow.from_record(r)) for r in records if r.role == "context"
        ]
        return StepContext(messages=messages, chunks=[*rows, *gathered.skipped])

    # -- the SessionLink protocol --------------------------------------------------------------

    def bind(self) -> AbstractContextManager[None]:
        return bind_scope(self.scope)

    async def preamble(self) -> AsyncGenerator[Chunk, None]:
        if self.created:
            await self.events.emit("session.started", {"agent": self.agent.name})
        await self.events.emit("turn.started", {"turn": self.scope.info.turn.sequence})
        view = self.view
        if view is None or not view.waiting:
            return
        self.settlement = Settlement(
            view.waiting,
            view.answers,
            tools=self.config.tools,
            inactive=view.inactive_now,
            deadline=view.deadline,
            contexts=self.config.contexts,
            recorder=self.config.recorder,
            session=self,
        )
        async with aclosing(self.settlement.chunks()) as chunks:
            async for chunk in chunks:
                yield chunk

    async def before_step(self, step_number: int) -> StepContext:
        self.in_step = True
        context = self.first or await self._commit(step_number)
        if self.first is not None and self.events.queued:
            # session.started / turn.started handlers queued context after the turn's first
            # commit: it still reaches this first call.
            more = await self._commit(step_number, gather=False)
            context = StepContext(
                messages=[*context.messages, *more.messages], chunks=[*context.chunks, *more.chunks]
            )
        self.first = None
        rows = [c.row for c in context.chunks if isinstance(c, ContextRowChunk)]
        if rows:
            await self.events.emit(
                "context.committed",
                {
                    "count": len(rows),
                    "kinds": [r.kind for r in rows],
                    "sources": [r.source for r in rows],
                },
            )
        for chunk in context.chunks:
            if not isinstance(chunk, ContextRowChunk):
                data = {"reason": chunk.reason, "source": chunk.source}  # type: ignore[union-attr]
                await self.events.emit("context.skipped", data)
        await self.events.emit("step.started", {"step": step_number})
        return context

    async def gate(self, call: ToolCall) -> GateReason | None:
        # Active tools as folded from the log at this step's model call. __finish__ can never
        # be switched off (validation refuses it), so forced completion can always call it.
        if call.name != FINISH_TOOL_NAME and call.name in self.context_pass.fold.inactive:
            return "tool_inactive"
        return None

    def tool_context(
        self, call: ToolCall, tool: Tool, context: Any, write: Callable[[Chunk], None]
    ) -> ToolContext:
        async def add(items: Sequence[Any], position: int) -> int:
            # A tool's items always carry source "tool"; a re-run of the same call site (same
            # call id, same position) records nothing: first wins, never refused.
            clean = validate_items(items, forced_source="tool")
            for item in clean:
                if item.get("enable"):
                    logger.warning(
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
            _write=write,
        )

    async def after_step(self, step: StepResult, *, final: bool) -> None:
        """Persist the step (messages, checkpoint; the status when it is the last), then
        report it."""
        write = TurnWrite(messages=self._records(step), checkpoint=self._checkpoint(step))
        if final:
            if step.pending:
                write = replace(write, status="paused", meta=self.meta.paused())
            else:
                write = replace(write, status="idle")
        await self.store.write_turn(self.session_id, write)
        self.ended = final
        self.in_step = False
        await self.events.emit("message.completed", {"step": step.step_number, "text": step.text})
        for result in step.tool_results:
            # A call the gate refused ran nothing of its tool: no after-tool hook either.
            if result.status not in ("pending", "not_executed"):
                await self.events.emit(
                    "action.result",
                    {
                        "tool_call_id": result.tool_call_id,
                        "tool_name": result.tool_name,
                        "status": result.status,
                    },
                )
        await self.events.emit(
            "step.completed", {"step": step.step_number, "finish_reason": step.finish_reason}
        )
        if final:
            await self._ended(step)

    async def _ended(self, step: StepResult) -> None:
        if step.pending:
            pending = [r.tool_call_id for r in step.pending]
            await self.events.emit("session.waiting", {"pending": pending})
            return
        await self.events.emit("turn.completed", {"finish_reason": step.finish_reason})
        finish_tool = self.config.finish_tool
        for result in step.tool_results:
            if result.tool_name == finish_tool and result.status == "output":
                await self.events.emit("session.completed", {"output": result.output})

    def _records(self, step: StepResult) -> list[dict[str, Any]]:
        """The step's messages as stored: with the bookkeeping keys (``_``-prefixed, never
        sent to the model) that the stored UI messages are rebuilt from."""
        statuses = {r.tool_call_id: r.status for r in step.tool_results}
        approvals = [
            r.tool_call_id
            for r in step.pending
            if (tool := self.config.tools.get(r.tool_name)) and tool.pauses_for == "approval"
        ]
        records: list[dict[str, Any]] = []
        for m in step.response_messages:
            if m["role"] == "assistant":
                extra: dict[str, Any] = {"_awaiting_approval": approvals} if approvals else {}
                if self.written:
                    extra["_data"] = list(self.written)  # the tools' data parts, for the UI
                if self.sources:
                    extra["_sources"] = list(self.sources)
                records.append({**m, "_message_id": self.config.message_id, **extra})
            else:
                records.append({**m, "_status": statuses.get(m.get("tool_call_id", ""), "output")})
        return records

    def _checkpoint(self, step: StepResult) -> Checkpoint:
        return Checkpoint(
            id="",
            session_id=self.session_id,
            step_number=step.step_number,
            log_seq=0,
            state={
                "slots": dict(self.scope.state),
                "inactive": sorted(self.context_pass.fold.inactive),
            },
            created_at=time.time(),
        )


def _busy(session_id: str) -> SessionBusyError:
    return SessionBusyError(f"session {session_id!r} is already running; wait for its turn to end")
