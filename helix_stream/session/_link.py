"""How an opened turn takes part in the loop: :class:`TurnLink`, its
:class:`~helix_stream.loop._config.SessionLink`.

Through the link's methods, and nothing else, the turn commits the context before each
model call (a retried attempt's too), gates tool calls, gives tools their context, session,
sandbox and skills, persists each finished
step (its messages and a checkpoint; the last one also sets the new status), reports
lifecycle events to the agent's hooks after each is durably recorded, and ends the turn when
the run is over without its last step having ended it (:func:`~._finish.finish_turn`).

A call that waits for the user to sign in is *parked* through the link (:meth:`TurnLink.park`:
the sign-in is kept in the store, ``_authorization.py``); the write that pauses the turn
records where each parked call stands, and ``session.waiting`` says ``wait:
"authorization"`` with the strategy and the URL. When settling a paused turn's calls parks
one again (an approved call with no token yet), the turn pauses at once
(:meth:`TurnLink.paused`), with no model call.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractContextManager, aclosing
from dataclasses import replace
from typing import Any

from .._event_stream import FunctionSubscriber, RunEvent, StepEnded, Subscriber
from .._messages import message_text
from ..auth._cache import AuthSettings
from ..auth._flow import ParkForSignIn
from ..chunks import Chunk, ContextRowChunk, ContextSkipped, ToolAuthorizationRequest
from ..context import TOOL_SOURCE, validate_items
from ..loop._config import GateReason, RunEnd, StepCommit, ToolRun
from ..state import bind_scope
from ..steps import StepResult, ToolCall, ToolResult
from ..store import Checkpoint, TurnWrite
from ..tools import FINISH_TOOL_NAME, Tool, ToolContext
from ._authorization import waiting_answer
from ._commits import opened_meta, opening
from ._finish import finish_turn
from ._meta import TurnMeta
from ._open import Opened
from ._pending import Settled, Settlement
from ._records import interrupted_record, step_records

__all__ = ["TurnLink"]

logger = logging.getLogger("helix_stream.context")


class TurnLink:
    """The session side of one turn's run (see the module docstring).

    Args:
        opened: What :func:`~._open.open_turn` opened.
    """

    def __init__(self, opened: Opened) -> None:
        self._opened = opened
        request = opened.request
        self._store = request.store
        self._writer = request.writer  # the turn's writes, with its lease
        self._session_id = request.session_id
        self._setup = request.setup
        self._commits = opened.commits
        self._events = opened.events
        self._meta = opened.meta  # the bookkeeping as the turn's first commit wrote it
        self._settled: Settled | None = None  # what settling the waiting calls produced
        self._in_step = False  # a step is running (a failure is also its step.failed)
        self._ended = False  # the last step's write set the final status
        self._stepped = False  # a step's write stored the turn's answer (or part of it)
        self._steps = 0  # steps begun
        # Calls parked on a sign-in: call id -> (strategy, url), in the order they parked.
        self._parked: dict[str, tuple[str, str]] = {}

    def bind(self) -> AbstractContextManager[None]:
        return bind_scope(self._opened.scope)

    async def preamble(self, tools: ToolRun) -> AsyncGenerator[Chunk, None]:
        opened = self._opened
        view = opened.view
        if opened.created:
            await self._events.emit("session.started", {"agent": opened.request.agent.name})
        # A run that resumes a paused turn carries the same turn on: it started already.
        if not (view.waiting and opened.meta.turns == view.meta.turns):
            await self._events.emit("turn.started", {"turn": opened.scope.info.turn.sequence})
        if not view.waiting:
            return
        settlement = Settlement(
            view.waiting,
            view.answers,
            tools=self._setup.tools,
            inactive=view.inactive_now,
            deadline=view.deadline,
            contexts=self._setup.contexts,
            recorder=self._setup.recorder,
            session=self,
            moved_on=opened.request.message is not None,
            tool_run=tools,
        )
        async with aclosing(settlement.chunks()) as chunks:
            async for chunk in chunks:
                yield chunk
        self._settled = settlement.outcome()

    async def paused(self) -> bool:
        """After settling: a call parked again before any step? Then write the pause now."""
        if self._steps or not self._parked or self._ended:
            return False
        opened, settled = self._opened, self._settled
        write = opening(
            opened.view,
            opened.meta,
            message=None,
            settled=settled.messages if settled else (),
            rows=settled.rows if settled else (),
        )
        meta = opened_meta(opened.view, opened.meta, write)
        patch = {**(write.meta or {}), **meta.paused(), **self._parked_answers()}
        await self._writer.write_turn(self._session_id, replace(write, status="paused", meta=patch))
        self._ended = True
        await self._action_results(settled.results if settled else ())
        await self._events.emit("session.waiting", self._waiting_data(list(self._parked)))
        return True

    def token_settings(self, given: AuthSettings) -> AuthSettings:
        authorization = self._opened.request.authorization
        return given if authorization is None else authorization.settings

    async def park(self, park: ParkForSignIn) -> ToolAuthorizationRequest:
        authorization = self._opened.request.authorization
        assert authorization is not None  # token_settings said the run parks
        sign_in = await authorization.begin(park, self._session_id)
        name = park.strategy.name
        self._parked[park.tool_call_id] = (name, sign_in.url)
        return ToolAuthorizationRequest(
            tool_call_id=park.tool_call_id, strategy=name, url=sign_in.url
        )

    def _parked_answers(self) -> dict[str, Any]:
        """The meta patch that records each parked call as waiting for its sign-in."""
        patch: dict[str, Any] = {}
        for call_id, (strategy, url) in self._parked.items():
            patch.update(TurnMeta.answer(call_id, waiting_answer(strategy, url)))
        return patch

    def _waiting_data(self, pending: list[str]) -> dict[str, Any]:
        """``session.waiting``'s data: what the calls wait for; for a sign-in, the strategy
        and the URL (of the first parked call; ``authorizations`` lists each)."""
        parked = [
            {"tool_call_id": call_id, "strategy": strategy, "url": url}
            for call_id, (strategy, url) in self._parked.items()
        ]
        if not parked:
            return {"pending": pending}
        first = parked[0]
        return {
            "pending": pending,
            "wait": "authorization",
            "strategy": first["strategy"],
            "url": first["url"],
            "authorizations": parked,
        }

    async def before_step(self, step_number: int) -> StepCommit:
        self._steps += 1
        self._in_step = True
        commit = await self._commit(step_number)
        await self._committed(commit)
        await self._events.emit("step.started", {"step": step_number})
        return commit

    async def before_retry(self, step_number: int) -> StepCommit:
        # The context pass runs before every model call: a retried attempt's too.
        commit = await self._commits.commit(step_number)
        await self._committed(commit)
        return commit

    async def _committed(self, commit: StepCommit) -> None:
        """Report a context commit to the hooks."""
        rows = [c.row for c in commit.chunks if isinstance(c, ContextRowChunk)]
        if rows:
            kinds, sources = [r.kind for r in rows], [r.source for r in rows]
            data = {"count": len(rows), "kinds": kinds, "sources": sources}
            await self._events.emit("context.committed", data)
        for chunk in commit.chunks:
            if isinstance(chunk, ContextSkipped):
                data = {"reason": chunk.reason, "source": chunk.source}
                await self._events.emit("context.skipped", data)

    async def _commit(self, step_number: int) -> StepCommit:
        """The context commit of a model call: the first call's was made when the turn opened
        (or is made now, after settling the waiting calls)."""
        first, commits = self._opened.first, self._commits
        if step_number > 0:
            return await commits.commit(step_number)
        if first is None:
            return await self._first_after_settling()
        if not self._events.queued:
            return first
        # session.started / turn.started handlers queued context after the turn's first
        # commit: it still reaches this first call.
        more = await commits.commit(0, gather=False)
        return StepCommit(
            messages=[*first.messages, *more.messages], chunks=[*first.chunks, *more.chunks]
        )

    async def _first_after_settling(self) -> StepCommit:
        opened, settled = self._opened, self._settled
        message = opened.request.message
        write = opening(
            opened.view,
            opened.meta,
            message=message,
            settled=settled.messages if settled else (),
            rows=settled.rows if settled else (),
        )
        user_text = message_text(message) if message else None
        commit = await self._commits.commit(0, write, user_text=user_text)
        self._meta = opened_meta(opened.view, opened.meta, write)
        await self._action_results(settled.results if settled else ())
        return commit

    async def gate(self, call: ToolCall) -> GateReason | None:
        # Active tools as folded from the log at this step's model call. __finish__ can never
        # be switched off (validation refuses it), so forced completion can always call it.
        inactive = self._commits.context_pass.fold.inactive
        if call.name != FINISH_TOOL_NAME and call.name in inactive:
            return "tool_inactive"
        return None

    def tool_context(
        self, call: ToolCall, tool: Tool, context: Any, write: Callable[[Chunk], None]
    ) -> ToolContext:
        session_id, store = self._session_id, self._store

        async def add(items: Sequence[Any], position: int) -> int:
            # A tool's items always carry source "tool"; a re-run of the same call site (same
            # call id, same position) records nothing: first wins, never refused.
            clean = validate_items(items, forced_source=TOOL_SOURCE)
            for item in clean:
                if item.get("enable"):
                    logger.warning(
                        "core.context.enable_ignored: tool %r may switch tools off, never on; "
                        "its enable of %s has no effect",
                        tool.name,
                        item["enable"],
                        extra={"event": "core.context.enable_ignored", "session_id": session_id},
                    )
            origin = {"type": "tool", "tool_call_id": call.id, "tool_name": tool.name}
            return await store.enqueue_context(
                session_id,
                clean,
                source=TOOL_SOURCE,
                origin={**origin, "position": position},
                key=f"call:{call.id}:{position}",
                on_key_conflict="ignore",
            )

        sandbox = self._opened.sandbox
        return ToolContext(
            context=context,
            tool_call_id=call.id,
            tool_name=tool.name,
            session=self._opened.scope.info,
            _add_context=add,
            _write=write,
            _sandbox=sandbox.get,
            _skill=sandbox.skill,
        )

    def subscribers(self) -> tuple[Subscriber, ...]:
        """What the turn subscribes to the run's event stream: a step's end, reported to the
        agent's hooks (a raising handler fails the turn: the session model's policy)."""
        if not self._opened.request.agent.hooks:
            return ()

        async def step_ended(event: RunEvent) -> None:
            assert isinstance(event, StepEnded)
            await self._report_step(event.step, final=event.final)

        return (FunctionSubscriber(frozenset({"step-ended"}), "fail", step_ended),)

    async def after_step(self, step: StepResult, *, final: bool) -> None:
        """Persist the step (messages, checkpoint; the status when it is the last); the run's
        ``step-ended`` event reports it (:meth:`subscribers`)."""
        records = step_records(step, message_id=self._opened.message_id, tools=self._setup.tools)
        write = TurnWrite(messages=records, checkpoint=self._checkpoint(step))
        if final:
            if step.pending:
                patch = {**self._meta.paused(), **self._parked_answers()}
                write = replace(write, status="paused", meta=patch)
            else:
                write = replace(write, status="idle", meta=self._meta.done())
        written = await self._writer.write_turn(self._session_id, write)
        self._ended = final
        self._stepped = True
        self._in_step = False
        if written.records:  # the checkpoint is at the step's last record
            self._events.checkpointed(written.records[-1].seq)

    async def _report_step(self, step: StepResult, *, final: bool) -> None:
        """The hook events of a recorded step (and of the turn's end, for its last)."""
        message = copy.deepcopy(step.response_messages[0]) if step.response_messages else None
        await self._events.emit(
            "message.completed", {"step": step.step_number, "text": step.text, "message": message}
        )
        await self._action_results(step.tool_results)
        await self._events.emit(
            "step.completed", {"step": step.step_number, "finish_reason": step.finish_reason}
        )
        if final:
            await self._ended_with(step)

    async def _action_results(self, results: Sequence[ToolResult]) -> None:
        """``action.result`` for each call that ended (a step's, or a paused turn's settled
        ones, once their tool messages are written)."""
        for result in results:
            # A call the gate refused ran nothing of its tool: no after-tool hook either.
            if result.status not in ("pending", "not_executed"):
                await self._events.emit(
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

    async def _ended_with(self, step: StepResult) -> None:
        if step.pending:
            pending = [r.tool_call_id for r in step.pending]
            await self._events.emit("session.waiting", self._waiting_data(pending))
            return
        await self._events.emit("turn.completed", {"finish_reason": step.finish_reason})
        for result in step.tool_results:
            if result.tool_name == self._setup.finish_tool and result.status == "output":
                await self._events.emit("session.completed", {"output": result.output})

    async def end(self, how: RunEnd) -> None:
        """End the turn unless its last step did (see :mod:`._finish`); never raises."""
        if how.error is None and (how.finished or self._ended):
            return
        text = how.unfinished_text
        # What the user saw of a step cut short is stored as the turn's answer; a turn that
        # failed before any text still stores one, empty, so that the log never holds two user
        # messages in a row (README, "Reliability notes").
        unfinished = None
        if not self._ended and (text or (not self._stepped and self._answers_user())):
            unfinished = interrupted_record(text or "", self._opened.message_id)
        await finish_turn(
            self._writer,
            self._events,
            session_id=self._session_id,
            turn=self._opened.scope.info.turn,
            error=how.error,
            in_step=self._in_step,
            unfinished=unfinished,
        )

    def _answers_user(self) -> bool:
        """The turn answers a user message: its own, or the one the log ends with."""
        if self._opened.request.message is not None:
            return True
        messages = [r for r in self._opened.view.snapshot.log if r.role != "context"]
        return bool(messages) and messages[-1].role == "user"

    def _checkpoint(self, step: StepResult) -> Checkpoint:
        return Checkpoint(
            id="",
            session_id=self._session_id,
            step_number=step.step_number,
            log_seq=0,
            state={
                "slots": dict(self._opened.scope.state),
                "inactive": sorted(self._commits.context_pass.fold.inactive),
            },
            created_at=time.time(),
        )
