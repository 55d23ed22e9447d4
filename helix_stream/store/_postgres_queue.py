"""PostgresStore's context queue: ``enqueue_context``, the context pass, and the queue reads.

:func:`enqueue` and :func:`commit` are the bodies of one ``BEGIN … COMMIT`` each (run by
``PostgresDatabase._write``) and return ``(result, wrote_anything)``. Between processes:

- a request key is claimed by inserting its ``context_keys`` row, whose primary key lets one
  claim win; the loser's ``ON CONFLICT`` waits for the winner's transaction, then skips, and
  the loser judges the winner's items (same → 0, other → conflict);
- an enqueue takes no session lock, so ``POST /context`` never waits for a context pass.
  Enqueues of one session take a transaction-level advisory lock of their own instead, so
  that the count of queued items they check against ``max_queued_items`` cannot be passed by
  two of them at once (a pass running meanwhile only makes the count high, never low);
- a pass locks the session row first and only then reads the queue, so it sees every entry
  committed before it and no other pass can take the same ones. An entry committed during
  the pass is the next pass's: none is lost, none delivered twice.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any, Literal

from helix_stream.store._postgres_db import Row, Tx
from helix_stream.store._protocol import QueueEntry
from helix_stream.store._shared import (
    key_conflict,
    queue_entries_from_rows,
    queue_full,
    session_not_found,
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
# The lock is taken first, so the count's snapshot (a later statement) sees every entry that an
# earlier holder committed.
_SQL_ENQUEUE_LOCK = "SELECT pg_advisory_xact_lock(%s)"
# Whether the session exists, and how many items its queue holds, in one round trip.
_SQL_QUEUED_ITEMS = (
    "SELECT EXISTS (SELECT 1 FROM {s}.sessions WHERE id = %(sid)s),"
    " COALESCE(SUM(json_array_length(items)), 0) FROM {s}.context_queue"
    " WHERE session_id = %(sid)s AND delivered_seq IS NULL"
)


def queue_entries(rows: list[Row]) -> list[QueueEntry]:
    """The entries of ``SQL_PENDING`` / ``SQL_DELIVERED`` rows."""
    return queue_entries_from_rows(rows)


def _lock_key(schema: str, session_id: str) -> int:
    """A signed 64-bit advisory-lock key for enqueueing to one session of one schema."""
    digest = hashlib.sha256(f"helix_stream.enqueue:{schema}:{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def enqueue(
    tx: Tx,
    session_id: str,
    count: int,
    params: dict[str, Any],
    on_key_conflict: Literal["raise", "ignore"],
    cap: int,
) -> tuple[int, bool]:
    """Queue one entry of ``count`` items (see ``Store.enqueue_context``), unless the session's
    queue would then hold more than ``cap`` undelivered items.

    ``params`` holds the encoded ``items`` and ``origin``, ``source``, ``key`` and its
    ``digest``.
    """
    key: str | None = params["key"]
    await tx.send(_SQL_ENQUEUE_LOCK, (_lock_key(tx.schema, session_id),))
    row = await tx.one(_SQL_QUEUED_ITEMS, {"sid": session_id})  # the lock is granted by now
    assert row is not None
    exists, queued = row[0], int(row[1])
    if not exists:
        raise session_not_found(session_id)
    if count:
        if queued + count > cap:
            if key is not None and await tx.one(_SQL_KEY, (session_id, key)) is not None:
                return await _judge_key(tx, session_id, key, params, on_key_conflict)
            raise queue_full(session_id, queued, count, cap)
        values = {**params, "sid": session_id, "now": time.time()}
        if key is None:
            # Always one row: no need to wait for its count (it goes out with COMMIT).
            await tx.send(_SQL_ENQUEUE, values)
            return count, True
        if await tx.execute(_SQL_ENQUEUE_KEYED, values):
            return count, True
    if key is None:
        return 0, False
    return await _judge_key(tx, session_id, key, params, on_key_conflict)


async def _judge_key(
    tx: Tx,
    session_id: str,
    key: str,
    params: dict[str, Any],
    on_key_conflict: Literal["raise", "ignore"],
) -> tuple[int, bool]:
    # The key was claimed before (maybe by another process a moment ago, whose transaction
    # ON CONFLICT waited for): judge the items it was claimed with.
    row = await tx.one(_SQL_KEY, (session_id, key))
    if row is None:  # no items and an unused key: no request to remember
        return 0, False
    if row[0] == params["digest"] or on_key_conflict == "ignore":
        return 0, False
    raise key_conflict(session_id, key)
