"""The context pass: what a session adds before every model call.

Before each model call of a session the turn runs the pass: :meth:`ContextPass.gather` calls
the step_context hook (from the cursor of the last batch in the log) and the memory recall, and
returns their rows and skips; the turn then commits them together with everything queued, as
context rows **in one store transaction**, and hands the committed records back to
:meth:`ContextPass.take`, which folds them (active tools, cursor, memories) and renders them as
the model messages the loop appends.

A record is rendered once, when it is committed or first read, and the loop keeps the
rendering: earlier request messages are sent as the same bytes on every later call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._messages import message_text
from ..chunks import ContextSkipped
from ..models._family import Family
from ..store import LogRecord
from ._log_fold import LogFold
from ._memory import recall_memories
from ._rows import render_record
from ._step_context import StepContextLimits, StepContextRequest, run_step_context
from ._summary import epoch_records

__all__ = ["ContextPass", "Gathered"]


@dataclass(frozen=True, slots=True)
class Gathered:
    """What the hook and the memory recall bring for one model call (not yet committed).

    Example::

        gathered = Gathered()                            # nothing from the hook or memory this call
        assert gathered.rows == [] and gathered.skipped == []
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[ContextSkipped] = field(default_factory=list)


class ContextPass:
    """The context pass of one turn of one session.

    Args:
        session_id: The session.
        log: Its log as the turn read it.
        step_context: The step_context hook, if any.
        limits: Its limits.
        memory: The memory recall, if any.
        family: The provider family the turn's model is sent as: it decides the rows' form
            (README, "Rows on each provider").

    Attributes:
        fold: What the log adds up to so far (active tools, cursor, memory ids).

    Example::

        snapshot = await store.read_snapshot("session-1")
        context_pass = ContextPass("session-1", snapshot.log, family="anthropic")
        print(context_pass.fold.inactive)               # the tools the log has switched off
    """

    def __init__(
        self,
        session_id: str,
        log: Sequence[LogRecord],
        *,
        step_context: Callable[[StepContextRequest], Any] | None = None,
        limits: StepContextLimits | None = None,
        memory: Callable[[str, str], Any] | None = None,
        family: Family = "openai",
    ) -> None:
        self.session_id = session_id
        self.family: Family = family
        self.step_context = step_context
        self.limits = limits or StepContextLimits()
        self.memory = memory
        self.fold = LogFold()
        self._last_user = ""
        self._fold_in(log)
        # After a summary row, the model sees its epoch (context/_summary.py); the fold is
        # the whole log's.
        self.messages = [render_record(r, family) for r in epoch_records(log)]

    def _fold_in(self, records: Sequence[LogRecord]) -> None:
        self.fold.add(records)
        for record in records:
            if record.role == "user":
                self._last_user = message_text(record.payload)

    def take(self, records: Sequence[LogRecord]) -> list[dict[str, Any]]:
        """Fold committed records in; return them as the model sees them."""
        self._fold_in(records)
        return [render_record(record, self.family) for record in records]

    async def gather(self, step_number: int, *, user_text: str | None = None) -> Gathered:
        """Run the hook and the memory recall for the call about to be made.

        Args:
            step_number: The step about to run.
            user_text: The user's new message, when it is committed with these rows (memory
                recalls for it).
        """
        rows: list[dict[str, Any]] = []
        skipped: list[ContextSkipped] = []
        if self.step_context is not None:
            request = StepContextRequest(
                session_id=self.session_id, cursor=self.fold.cursor, step_number=step_number
            )
            outcome = await run_step_context(self.step_context, request, self.limits)
            rows.extend(outcome.rows)
            if outcome.skipped is not None:
                skipped.append(outcome.skipped)
        if self.memory is not None:
            last_user = self._last_user if user_text is None else user_text
            row, skip = await recall_memories(
                self.memory, self.session_id, last_user, self.fold.memory_ids
            )
            if row is not None:
                rows.append(row)
            if skip is not None:
                skipped.append(skip)
        return Gathered(rows=rows, skipped=skipped)
