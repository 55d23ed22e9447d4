"""The UI streams of running turns, shared by every process: :class:`PostgresStreamLog`.

A chat server that runs on several processes publishes each turn's UI stream here
(:class:`helix_stream.server.SharedStreamRegistry` owns one log), so that a client that
reconnects to any process can resume it. These tables are not sessions: they live beside the
store's, in its schema and on its pool; the store hands the log out as its ``stream_log``
(``store/_features.py``: ``StreamLog``). This module owns
their SQL: a session's latest stream (``ui_streams``, one row per session), its events in
batches (``ui_stream_events``), the notification that tells listeners a stream grew
(``pg_notify`` on :func:`channel`), and the deletion of finished streams after they have been
kept for a while.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from helix_stream._limits import check_session_id
from helix_stream.store._features import StreamEvents
from helix_stream.store.postgres._db import Tx

if TYPE_CHECKING:
    from helix_stream.store.postgres._db import PostgresDatabase

__all__ = ["PostgresStreamLog", "channel"]

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


class PostgresStreamLog:
    """The UI streams of a :class:`~helix_stream.store.PostgresStore`'s schema.

    Every call is one read or one transaction on the store's pool, with its retry after a lost
    connection (its writes count in the store's ``write_transactions``).
    """

    def __init__(self, store: PostgresDatabase) -> None:
        self._db = store
        self._channel = channel(store.schema)

    async def open(self, session_id: str, stream_id: str, *, keep_for: float) -> None:
        """Make ``stream_id`` the session's stream (its earlier one goes); drop streams that
        finished more than ``keep_for`` seconds ago."""
        check_session_id(session_id)

        async def tx(tx: Tx) -> tuple[None, bool]:
            now = time.time()
            await tx.send(_SQL_DROP_OLD, (now - keep_for,))
            await tx.send(_SQL_DROP_SESSION, (session_id,))
            await tx.send(_SQL_OPEN, (session_id, stream_id, now))
            return None, True

        await self._db._write(tx, "open_ui_stream", pipeline=True)

    async def append(
        self, stream_id: str, seq: int, events: str, *, finished: bool = False
    ) -> None:
        """Add a batch of SSE events (``events`` may be empty for the last one; ``finished``:
        it is the last) and tell the listeners of every process."""

        async def tx(tx: Tx) -> tuple[None, bool]:
            if events:
                await tx.send(_SQL_APPEND, (stream_id, seq, events))
            if finished:
                await tx.send(_SQL_FINISH, (time.time(), stream_id))
            # Delivered at commit, to every listening process.
            await tx.send(_SQL_NOTIFY, (self._channel, stream_id))
            return None, True

        await self._db._write(tx, "append_ui_stream", pipeline=True)

    async def read(
        self, session_id: str, after_seq: int = 0, stream_id: str | None = None
    ) -> StreamEvents:
        """The session's latest stream after batch ``after_seq`` (``stream_id``: only if it is
        still that one; a new turn's stream is not the one a follower was reading)."""
        check_session_id(session_id)

        async def read(tx: Tx) -> StreamEvents:
            row = await tx.one(_SQL_STREAM, (session_id,))
            if row is None or (stream_id is not None and row[0] != stream_id):
                return StreamEvents(stream_id=None)
            batches = [
                (int(seq), str(text))
                for seq, text in await tx.all(_SQL_EVENTS, (row[0], after_seq))
            ]
            return StreamEvents(stream_id=row[0], batches=batches, finished=row[1] is not None)

        return await self._db._read(read, "read_ui_stream")

    async def listen(self) -> AsyncIterator[str]:
        """The ids of streams as they grow, from every process (a connection of its own,
        ``LISTEN`` on the schema's channel), until the iterator is closed."""
        async with await self._db._connect() as conn:
            await conn.execute(f'LISTEN "{self._channel}"')
            async for note in conn.notifies():
                yield note.payload
