"""PostgresStore's UI streams: the events of running turns, shared by every process.

A chat server that runs on several processes publishes each turn's UI stream here
(:class:`helix_stream.server.SharedStreamRegistry`), so that a client that reconnects to any
process can resume it. This module owns the SQL: a session's latest stream (``ui_streams``, one
row per session), its events in batches (``ui_stream_events``), the notification that tells
listeners a stream grew (``pg_notify`` on :func:`channel`), and the deletion of finished
streams after they have been kept for a while.
"""

from __future__ import annotations

import functools
import hashlib
import time
from dataclasses import dataclass, field

from helix_stream.store._postgres_db import Tx

__all__ = ["StreamEvents", "append", "channel", "open_stream", "read"]

_SQL_DROP_SESSION = "DELETE FROM {s}.ui_streams WHERE session_id = %s"
_SQL_DROP_OLD = "DELETE FROM {s}.ui_streams WHERE finished_at < %s"
_SQL_OPEN = "INSERT INTO {s}.ui_streams (session_id, stream_id, started_at) VALUES (%s, %s, %s)"
_SQL_APPEND = "INSERT INTO {s}.ui_stream_events (stream_id, seq, events) VALUES (%s, %s, %s)"
_SQL_FINISH = "UPDATE {s}.ui_streams SET finished_at = %s WHERE stream_id = %s"
_SQL_NOTIFY = "SELECT pg_notify(%s, %s)"
_SQL_STREAM = "SELECT stream_id, finished_at FROM {s}.ui_streams WHERE session_id = %s"
_SQL_EVENTS = (
    "SELECT seq, events FROM {s}.ui_stream_events WHERE stream_id = %s AND seq > %s ORDER BY seq"
)


@functools.cache  # asked for on every batch a stream publishes
def channel(schema: str) -> str:
    """The notification channel of a schema's streams (a plain name of at most 63 bytes)."""
    return "helix_ui_" + hashlib.sha256(schema.encode()).hexdigest()[:20]


@dataclass(frozen=True, slots=True)
class StreamEvents:
    """What a session's latest stream holds after a position.

    Attributes:
        stream_id: The stream, or ``None`` when the session has none.
        batches: ``(seq, events)`` after the position asked for, in order; ``events`` is the
            SSE text of one or more events.
        finished: The stream has ended: nothing will follow.
    """

    stream_id: str | None
    batches: list[tuple[int, str]] = field(default_factory=list)
    finished: bool = True


async def open_stream(tx: Tx, session_id: str, stream_id: str, keep_for: float) -> None:
    """Make ``stream_id`` the session's stream (its earlier one goes); drop streams that
    finished more than ``keep_for`` seconds ago."""
    now = time.time()
    await tx.send(_SQL_DROP_OLD, (now - keep_for,))
    await tx.send(_SQL_DROP_SESSION, (session_id,))
    await tx.send(_SQL_OPEN, (session_id, stream_id, now))


async def append(
    tx: Tx, stream_id: str, seq: int, events: str, *, finished: bool, notify: str
) -> None:
    """Add a batch of events (``events`` may be empty for the last one); tell listeners."""
    if events:
        await tx.send(_SQL_APPEND, (stream_id, seq, events))
    if finished:
        await tx.send(_SQL_FINISH, (time.time(), stream_id))
    # Delivered at commit, to every listening process.
    await tx.send(_SQL_NOTIFY, (notify, stream_id))


async def read(tx: Tx, session_id: str, after_seq: int, stream_id: str | None) -> StreamEvents:
    """The session's latest stream after ``after_seq`` (``stream_id``: only if it is still
    that one; a new turn's stream is not the one a follower was reading)."""
    row = await tx.one(_SQL_STREAM, (session_id,))
    if row is None or (stream_id is not None and row[0] != stream_id):
        return StreamEvents(stream_id=None)
    batches = [
        (int(seq), str(text)) for seq, text in await tx.all(_SQL_EVENTS, (row[0], after_seq))
    ]
    return StreamEvents(stream_id=row[0], batches=batches, finished=row[1] is not None)
