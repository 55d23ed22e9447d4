"""The context pass: built-in step middleware that runs before every model call.

It commits everything new in the session's queue as context rows **in one store
transaction**, emits a ``context-row`` chunk per row, and hands the loop the session's log
rendered as model messages — rows at their place in the log. Rendered messages are cached
per run, so a row (or a message) is rendered once and sent as the same bytes ever after.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..chunks import ContextRowChunk
from ..middleware import StepInput
from ..store import Store
from ._rows import ContextRow, render_record

__all__ = ["ContextPass", "strip_private"]


def strip_private(message: Mapping[str, Any]) -> dict[str, Any]:
    """A stored message without the executor's bookkeeping keys (those starting with ``_``)."""
    return {k: v for k, v in message.items() if not k.startswith("_")}


class ContextPass:
    """Step middleware bound to one session (the executor puts it first in the chain)."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._rendered: list[dict[str, Any]] = []
        self._last_seq = 0
        self.passes = 0

    async def __call__(self, step: StepInput) -> dict[str, Any]:
        self.passes += 1
        for record in await self.store.commit_context(self.session_id):
            step.emit(ContextRowChunk(row=ContextRow.from_record(record)))
        await self.refresh()
        return {"messages": list(self._rendered)}

    async def refresh(self) -> list[dict[str, Any]]:
        """Render what the log gained since the last call; return the whole rendering."""
        for record in await self.store.read_log(self.session_id, after_seq=self._last_seq):
            message = render_record(record)
            self._rendered.append(strip_private(message) if record.role != "context" else message)
            self._last_seq = record.seq
        return self._rendered
