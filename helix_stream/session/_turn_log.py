"""What an opened turn persists of its run: :class:`TurnLog`, the three moments of the loop's
:class:`~helix_stream.loop._env.TurnLog`.

* :meth:`TurnLog.commit` before each model call (a retried attempt's too): the context pass,
  whose switched-off tools the loop's gate reads from the commit; the first call's commit was
  made with the claim, or is made now with what the resume step settled; when that left a call
  parked on a sign-in again, the turn pauses at once instead, with no model call;
* :meth:`TurnLog.persist` each finished step: its messages and a checkpoint; the last one also
  sets the new status (``idle``, or ``paused`` for answers and sign-ins);
* :meth:`TurnLog.end` once the run is over: the turn ends unless its last step ended it
  (:func:`~._finish.finish_turn`).

Each emits the session's durable events on the turn's event stream once they are recorded
(:class:`~._events.TurnEvents`; a step's own, once the run's ``step-ended`` event reports it).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from .._messages import message_text
from .._usage_limits import UsageTotals
from ..chunks import ContextRowChunk, ContextSkipped
from ..loop._env import Resumed, RunEnd, StepCommit
from ..steps import StepResult
from ..store import Checkpoint, TurnWrite
from ._commits import opened_meta, opening
from ._finish import finish_turn
from ._open import Opened
from ._pending import ResumePlan
from ._records import interrupted_record, step_records
from ._steering import STEER_FLAG
from ._usage import USAGE_KEY

__all__ = ["TurnLog"]


class TurnLog:
    """The session side of one turn's run (see the module docstring).

    Args:
        opened: What :func:`~._open.open_turn` opened.
        plan: What becomes of the calls a paused turn waited for, if any.
    """

    def __init__(self, opened: Opened, plan: ResumePlan | None) -> None:
        self._opened = opened
        request = opened.request
        self._writer = request.writer  # the turn's writes, with its lease
        self._session_id = request.session_id
        self._setup = request.setup
        self._commits = opened.commits
        self._events = opened.events
        self._meta = opened.meta  # the bookkeeping as the turn's first commit wrote it
        self._parking = opened.parking
        self._plan = plan
        self._in_step = False  # a step is running (a failure is also its step.failed)
        self._ended = False  # the last step's write set the final status
        self._stepped = False  # a step's write stored the turn's answer (or part of it)
        self._steps = 0  # steps begun
        # The session's usage totals as of the last step written (kept in its meta: _usage.py).
        self._usage = opened.budget.spent if opened.budget is not None else UsageTotals()
        self._follow_up = False  # the final write saw a steered message's flag

    async def commit(
        self, step_number: int, *, retry: bool = False, resumed: Resumed | None = None
    ) -> StepCommit:
        if retry:
            # The context pass runs before every model call: a retried attempt's too.
            commit = await self._commits.commit(step_number)
            await self._committed(commit)
            return self._gated(commit)
        if resumed is not None and resumed.parked and not self._steps and not self._ended:
            await self._pause(resumed)
            return StepCommit(paused=True)
        self._steps += 1
        self._in_step = True
        commit = await self._commit(step_number, resumed)
        await self._committed(commit)
        await self._events.emit("step.started", {"step": step_number})
        return self._gated(commit)

    def _gated(self, commit: StepCommit) -> StepCommit:
        """``commit`` with the tools switched off as folded from the log now (so they follow
        rewinds and branches); the loop's gate reads them."""
        inactive = frozenset(self._commits.context_pass.fold.inactive)
        return replace(commit, inactive=inactive)

    def _opening(self, message: dict[str, Any] | None, resumed: Resumed | None) -> TurnWrite:
        """The turn's opening write after the resume step: ``message`` (the user's new one,
        if any), the settled calls' messages and the late answers' rows."""
        opened, plan = self._opened, self._plan
        return opening(
            opened.view,
            opened.meta,
            message=message,
            settled=plan.messages(resumed) if plan else (),
            rows=plan.rows if plan else (),
        )

    async def _pause(self, resumed: Resumed) -> None:
        """Settling parked a call again before any step: write the pause now."""
        opened = self._opened
        write = self._opening(None, resumed)
        meta = opened_meta(opened.view, opened.meta, write)
        patch = {**(write.meta or {}), **meta.paused(), **self._parking.answers()}
        await self._writer.write_turn(self._session_id, replace(write, status="paused", meta=patch))
        self._ended = True
        await self._events.action_results(self._plan.results(resumed) if self._plan else ())
        parked = list(self._parking.parked)
        await self._events.emit("session.waiting", self._parking.waiting_data(parked))

    async def _committed(self, commit: StepCommit) -> None:
        """Emit a context commit's events."""
        rows = [c.row for c in commit.chunks if isinstance(c, ContextRowChunk)]
        if rows:
            kinds, sources = [r.kind for r in rows], [r.source for r in rows]
            data = {"count": len(rows), "kinds": kinds, "sources": sources}
            await self._events.emit("context.committed", data)
        for chunk in commit.chunks:
            if isinstance(chunk, ContextSkipped):
                data = {"reason": chunk.reason, "source": chunk.source}
                await self._events.emit("context.skipped", data)

    async def _commit(self, step_number: int, resumed: Resumed | None) -> StepCommit:
        """The context commit of a model call: the first call's was made when the turn opened
        (or is made now, after settling the waiting calls)."""
        first, commits = self._opened.first, self._commits
        if step_number > 0:
            return await commits.commit(step_number)
        if first is None:
            return await self._first_after_settling(resumed)
        if not self._opened.hooks.queued:
            return first
        # session.started / turn.started handlers queued context after the turn's first
        # commit: it still reaches this first call.
        more = await commits.commit(0, gather=False)
        return StepCommit(
            messages=[*first.messages, *more.messages], chunks=[*first.chunks, *more.chunks]
        )

    async def _first_after_settling(self, resumed: Resumed | None) -> StepCommit:
        opened = self._opened
        message = opened.request.message
        write = self._opening(message, resumed)
        user_text = message_text(message) if message else None
        commit = await self._commits.commit(0, write, user_text=user_text)
        self._meta = opened_meta(opened.view, opened.meta, write)
        await self._events.action_results(self._plan.results(resumed) if self._plan else ())
        return commit

    async def persist(self, step: StepResult, *, final: bool) -> None:
        """Persist the step (messages, checkpoint; the status when it is the last); the run's
        ``step-ended`` event reports it (:meth:`~._events.TurnEvents.step_ended`)."""
        records = step_records(step, message_id=self._opened.message_id, tools=self._setup.tools)
        usage = self._usage.plus(step.usage)
        spent = {USAGE_KEY: usage.to_json()}  # with the step's messages, in one transaction
        write = TurnWrite(messages=records, checkpoint=self._checkpoint(step), meta=spent)
        if final:
            if step.pending:
                patch = {**spent, **self._meta.paused(), **self._parking.answers()}
                write = replace(write, status="paused", meta=patch)
            else:
                write = replace(write, status="idle", meta={**spent, **self._meta.done()})
        written = await self._writer.write_turn(self._session_id, write)
        self._usage = usage
        self._follow_up = write.status == "idle" and bool(written.session.meta.get(STEER_FLAG))
        self._ended = final
        self._stepped = True
        self._in_step = False
        if written.records:  # the checkpoint is at the step's last record
            self._events.checkpointed(written.records[-1].seq)

    @property
    def follow_up(self) -> bool:
        """The turn ended with its answer after a message was steered to it: the message may
        wait still, for a turn right after (``_steering.follow_ups``)."""
        return self._follow_up

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
