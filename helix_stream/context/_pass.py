"""The context pass: built-in step middleware that runs before every model call.

In order: it brings its fold of the log up to date, calls the step_context hook (from the
cursor of the last batch in the log) and the memory recall, then commits everything new — the
queue, the hook's rows, the memory row — as context rows **in one store transaction**, emits a
``context-row`` chunk per row (and a ``context_skipped`` chunk per skipped source), and hands
the loop the session's log rendered as model messages, rows at their place in the log.

Rendered messages are cached per run: a record is rendered once and sent as the same bytes on
every later call, so earlier request messages never change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._messages import message_text
from ..agent import StepContextLimits
from ..chunks import ContextRowChunk
from ..middleware import StepInput
from ..store import LogRecord, Store
from ._fold import LogFold
from ._hook import StepContextRequest, run_step_context
from ._memory import recall_memories
from ._rows import ContextRow, render_record

__all__ = ["ContextPass"]


class ContextPass:
    """Step middleware bound to one session (the executor puts it first in the chain).

    Attributes:
        fold: What the log adds up to (active tools, cursor, memory ids) as of the last pass.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        *,
        step_context: Callable[[StepContextRequest], Any] | None = None,
        limits: StepContextLimits | None = None,
        memory: Callable[[str, str], Any] | None = None,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.step_context = step_context
        self.limits = limits or StepContextLimits()
        self.memory = memory
        self.fold = LogFold(session_id)
        self._rendered: list[dict[str, Any]] = []
        self._last_seq = 0
        self._last_user = ""

    async def __call__(self, step: StepInput) -> dict[str, Any]:
        await self.refresh()
        extra: list[dict[str, Any]] = []
        skipped = []
        if self.step_context is not None:
            request = StepContextRequest(
                session_id=self.session_id, cursor=self.fold.cursor, step_number=step.step_number
            )
            outcome = await run_step_context(self.step_context, request, self.limits)
            extra.extend(outcome.rows)
            if outcome.skipped is not None:
                skipped.append(outcome.skipped)
        if self.memory is not None:
            row, skip = await recall_memories(
                self.memory, self.session_id, self._last_user, self.fold.memory_ids
            )
            if row is not None:
                extra.append(row)
            if skip is not None:
                skipped.append(skip)
        committed = await self.store.commit_context(self.session_id, extra)
        # Only the session's runner appends to the log, so the committed rows are all that is
        # new: no second read.
        self._take(committed)
        for record in committed:
            step.emit(ContextRowChunk(row=ContextRow.from_record(record)))
        for chunk in skipped:
            step.emit(chunk)
        return {"messages": list(self._rendered)}

    async def refresh(self) -> list[dict[str, Any]]:
        """Fold and render what the log gained since the last call; return the rendering."""
        self._take(await self.store.read_log(self.session_id, after_seq=self._last_seq))
        return self._rendered

    def _take(self, records: Sequence[LogRecord]) -> None:
        self.fold.add(records)
        for record in records:
            self._rendered.append(render_record(record))
            if record.role == "user":
                self._last_user = message_text(record.payload)
            self._last_seq = record.seq
