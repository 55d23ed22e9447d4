"""Memory auto-inject: recalled memories reach the model as a ``memory`` row before the call.

``recall(session_id, last_user_message)`` (sync or async) returns memories as
``{"id", "content"}`` dicts. Memories already given to the session (by id) are not given again.
A recall too large for a row (32 KiB) commits an *empty* memory row that records the skipped
ids — so they are not recalled again each step — and a ``context_skipped`` chunk.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from ..chunks import ContextSkipped
from ._items import MAX_ITEM_BYTES, item_size
from ._step_context import log_skipped

__all__ = ["recall_memories"]


async def recall_memories(
    recall: Callable[[str, str], Any], session_id: str, last_user_message: str, known_ids: set[str]
) -> tuple[dict[str, Any] | None, ContextSkipped | None]:
    """Return the memory row to commit (or ``None``) and a skip, if any."""
    try:
        out = recall(session_id, last_user_message)
        if inspect.isawaitable(out):
            out = await out
        memories = [
            m.model_dump()
            if isinstance(m, BaseModel)
            else {"id": str(m["id"]), "content": str(m["content"])}
            for m in out or []
        ]
    except Exception as exc:
        return None, log_skipped(session_id, "error", "memory", f"{type(exc).__name__}: {exc}")
    new = [m for m in memories if m["id"] not in known_ids]
    if not new:
        return None, None
    row: dict[str, Any] = {"kind": "memory", "memories": new, "source": "memory"}
    if item_size(row) > MAX_ITEM_BYTES:
        skipped = log_skipped(
            session_id, "too_large", "memory", f"{len(new)} memories over {MAX_ITEM_BYTES} bytes"
        )
        return {
            "kind": "memory",
            "memories": [],
            "source": "memory",
            "skipped_ids": [m["id"] for m in new],
        }, skipped
    return row, None
