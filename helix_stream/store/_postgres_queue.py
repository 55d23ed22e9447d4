"""PostgresStore's context queue: ``enqueue_context``, the context pass, and the queue reads.

:func:`enqueue` and :func:`commit` are the bodies of one ``BEGIN … COMMIT`` each (run by
``PostgresDatabase._write``) and return ``(result, wrote_anything)``. Between processes:

- a request key is claimed by inserting its ``context_keys`` row, whose primary key lets one
  claim win; the loser's ``ON CONFLICT`` waits for the winner's transaction, then skips, and
  the loser judges the winner's items (same → 0, other → conflict);
- an enqueue takes no session lock, so ``POST /context`` never waits for a context pass;
- a pass locks the session row first and only then reads the queue, so it sees every entry
  committed before it and no other pass can take the same ones. An entry committed during
  the pass is the next pass's: none is lost, none delivered twice.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from helix_stream.store._postgres_db import Row, Tx
from helix_stream.store._protocol import QueueEntry
from helix_stream.store._shared import (
    key_conflict,
    queue_entries_from_rows,
)

__all__ = ["SQL_DELIVERED", "SQL_PENDING", "enqueue", "queue_entries"]

# LEFT JOIN: see ``Tx.all_of_session``.
_QUEUE_COLUMNS = "q.id, q.items, q.source, q.key, q.origin, q.created_at, q.delivered_seq"
SQL_PENDING = (
    f"SELECT {_QUEUE_COLUMNS} FROM {{s}}.sessions s LEFT JOIN {{s}}.context_queue q"
    " ON q.session_id = s.id AND q.delivered_seq IS NULL WHERE s.id = %s ORDER BY q.id"
)
SQL_DELIVERED = (
    f"SELECT {_QUEUE_COLUMNS} FROM {{s}}.sessions s LEFT JOIN {{s}}.context_queue q"
    " ON q.session_id = s.id AND q.delivered_seq IS NOT NULL WHERE s.id = %s ORDER BY q.id"
)
_SQL_LOCK = "SELECT last_seq FROM {s}.sessions WHERE id = %s FOR NO KEY UPDATE"
_SQL_TAKE_PENDING = (
    "SELECT id, items, source, key, origin FROM {s}.context_queue"
    " WHERE session_id = %s AND delivered_seq IS NULL ORDER BY id"
)
# One statement claims the key and inserts the entry, so a lost claim inserts nothing. The
# foreign key from the key row to its entry is checked at the end of the statement, once both
# exist.
_SQL_ENQUEUE_KEYED = """WITH claimed AS (
    INSERT INTO {s}.context_keys (session_id, key, items_sha256, queue_id)
    VALUES (%(sid)s, %(key)s, %(digest)s,
            nextval(pg_get_serial_sequence('{s}.context_queue', 'id')))
    ON CONFLICT (session_id, key) DO NOTHING
    RETURNING queue_id)
INSERT INTO {s}.context_queue (id, session_id, items, source, key, origin, created_at)
SELECT queue_id, %(sid)s, %(items)s::json, %(source)s, %(key)s, %(origin)s::json, %(now)s
FROM claimed"""
_SQL_ENQUEUE = (
    "INSERT INTO {s}.context_queue (session_id, items, source, key, origin, created_at)"
    " VALUES (%(sid)s, %(items)s::json, %(source)s, %(key)s, %(origin)s::json, %(now)s)"
)
_SQL_KEY = "SELECT items_sha256 FROM {s}.context_keys WHERE session_id = %s AND key = %s"


def queue_entries(rows: list[Row]) -> list[QueueEntry]:
    """The entries of ``SQL_PENDING`` / ``SQL_DELIVERED`` rows."""
    return queue_entries_from_rows(rows)


async def enqueue(
    tx: Tx,
    session_id: str,
    count: int,
    params: dict[str, Any],
    on_key_conflict: Literal["raise", "ignore"],
) -> tuple[int, bool]:
    """Queue one entry of ``count`` items (see ``Store.enqueue_context``).

    ``params`` holds the encoded ``items`` and ``origin``, ``source``, ``key`` and its
    ``digest``.
    """
    key: str | None = params["key"]
    await tx.require_session(session_id)
    if count:
        sql = _SQL_ENQUEUE if key is None else _SQL_ENQUEUE_KEYED
        if await tx.execute(sql, {**params, "sid": session_id, "now": time.time()}):
            return count, True
    if key is None:
        return 0, False
    # The key was claimed before (maybe by another process a moment ago, whose transaction
    # ON CONFLICT waited for): judge the items it was claimed with.
    row = await tx.one(_SQL_KEY, (session_id, key))
    if row is None:  # no items and an unused key: no request to remember
        return 0, False
    if row[0] == params["digest"] or on_key_conflict == "ignore":
        return 0, False
    raise key_conflict(session_id, key)
