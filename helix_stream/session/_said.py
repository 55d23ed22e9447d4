"""What a dead turn had said: the text it streamed after its last committed step, read back from
the shared stream log where the store keeps one (``Store.stream_log``: PostgreSQL).

A turn whose process died left its session ``running``; the turn that takes the session over
stores an interrupted answer to the user message the dead one never answered. With this, that
answer holds what the user was shown before the crash (what a reload shows), not nothing. The
log holds the dead turn's UI stream as SSE events; a step's text is committed with the step, so
only the text after the last ``start-step``/``finish-step`` is missing from the log.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import Store

logger = logging.getLogger("helix_stream.session")

__all__ = ["streamed_text"]


async def streamed_text(store: Store, session_id: str) -> str:
    """The text the session's unfinished stream sent after its last step boundary; ``""``
    when the store keeps no stream log, the stream finished, or it cannot be read."""
    log = store.stream_log
    if log is None:
        return ""  # streams live in the dead process's memory: gone with it
    try:
        events = await log.read(session_id)
    except Exception:
        logger.warning("session %r: the dead turn's stream could not be read", session_id)
        return ""
    if events.stream_id is None or events.finished:
        return ""
    return _last_step_text("".join(text for _, text in events.batches))


def _last_step_text(sse: str) -> str:
    text: list[str] = []
    for line in sse.split("\n"):
        if not line.startswith("data: {"):
            continue
        try:
            chunk = json.loads(line[6:])
        except ValueError:
            continue
        kind = chunk.get("type")
        if kind in ("start-step", "finish-step"):
            text = []
        elif kind == "text-delta" and isinstance(chunk.get("delta"), str):
            text.append(chunk["delta"])
    return "".join(text)
