"""The session side of a compaction: where the kept tail starts, and the summary row appended.

The loop decides when to compact and makes the summarizer call (``loop/_compaction.py``);
:class:`SessionCompactor`, the turn's :class:`~helix_stream.loop._env.Compactor`, reads the
log to find the tail (:func:`~helix_stream.context._summary.tail_start`), renders the
summarizing row for the provider family, and appends the summary row in one write with the
turn's lease — the log is never rewritten — then renders the history the model sees from
then on (:func:`~helix_stream.context._summary.epoch_records`).
"""

from __future__ import annotations

import logging
from typing import Any

from ..chunks import ContextRowChunk
from ..context import ContextRow, render_record, render_row
from ..context._compaction import Compaction
from ..context._summary import (
    COMPACTION_SOURCE,
    SUMMARY_KIND,
    epoch_records,
    summarizer_row,
    summary_payload,
    tail_start,
)
from ..loop._env import StepCommit
from ..models._family import Family
from ..store import LogRecord, Store, TurnWrite
from ._commits import busy
from ._events import TurnEvents
from ._lease import TurnWriter
from ._open import Opened

__all__ = ["SessionCompactor", "compactor"]

logger = logging.getLogger("helix_stream.context")


class SessionCompactor:
    """One turn's compaction of its session (see the module docstring).

    Args:
        settings: The agent's compaction.
        store: Where the log is read.
        writer: How the turn writes (with its lease).
        session_id: The session.
        family: The provider family rows are rendered for.
        events: The turn's durable events (``context.committed`` for the summary row).
    """

    def __init__(
        self,
        settings: Compaction,
        *,
        store: Store,
        writer: TurnWriter,
        session_id: str,
        family: Family,
        events: TurnEvents,
    ) -> None:
        self._settings = settings
        self._store = store
        self._writer = writer
        self._session_id = session_id
        self._family: Family = family
        self._events = events
        self._log: list[LogRecord] = []

    @property
    def settings(self) -> Compaction:
        return self._settings

    async def plan(self) -> int | None:
        self._log = await self._store.read_log(self._session_id)
        return tail_start(self._log, self._settings.keep_last_turns)

    def summarizer_message(self) -> dict[str, Any]:
        settings = self._settings
        row = summarizer_row(settings.instructions, settings.keep_last_turns + 1)
        return render_row(row, self._family)

    async def append(self, summary: str, *, keep_from: int, model: str) -> StepCommit:
        payload = summary_payload(summary, keep_from=keep_from, model=model)
        result = await self._writer.write_turn(self._session_id, TurnWrite(rows=[payload]))
        if not result.applied:
            raise busy(self._session_id)
        log = [*self._log, *result.records]
        messages = [render_record(r, self._family) for r in epoch_records(log)]
        chunks = [ContextRowChunk(row=ContextRow.from_record(r)) for r in result.records]
        data = {"count": 1, "kinds": [SUMMARY_KIND], "sources": [COMPACTION_SOURCE]}
        await self._events.emit("context.committed", data)
        return StepCommit(messages=messages, chunks=chunks)

    def failed(self, error: BaseException) -> None:
        logger.warning(
            "core.context.compaction_failed: session %r goes on uncompacted: %s",
            self._session_id,
            type(error).__name__,
            extra={"event": "core.context.compaction_failed", "session_id": self._session_id},
        )


def compactor(opened: Opened) -> SessionCompactor | None:
    """The compaction of ``opened``'s turn, when its agent has one."""
    settings = opened.request.agent.compaction
    if settings is None:
        return None
    request = opened.request
    return SessionCompactor(
        settings,
        store=request.store,
        writer=request.writer,
        session_id=request.session_id,
        family=opened.commits.context_pass.family,
        events=opened.events,
    )
