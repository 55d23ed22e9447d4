"""SQLiteStore: the embedded default Store, on stdlib sqlite3 (WAL, one transaction per write).

The schema, the connections (on the event loop; a worker thread when the file is locked) and
the transaction wrapper are in ``_sqlite_db``; this module
is the protocol's methods, each a read or one ``BEGIN IMMEDIATE … COMMIT``.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from helix_stream._limits import check_key, check_session_id
from helix_stream.store import _sqlite_history, _sqlite_turns
from helix_stream.store._protocol import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    RewindResult,
    SessionRecord,
    SessionStatus,
)
from helix_stream.store._shared import (
    check_conflict_mode,
    check_expect,
    check_status,
    checkpoint_id,
    checkpoints_from_rows,
    decode,
    duplicate_checkpoint,
    encode,
    items_digest,
    key_conflict,
    merge_meta,
    message_role,
    queue_entries_from_rows,
    queue_full,
    session_not_found,
)
from helix_stream.store._sqlite_db import (
    SQL_DELIVERED,
    SQL_PENDING,
    SQL_READ_LOG,
    SQL_SESSION,
    SQLiteDatabase,
    last_seq,
    pending_items,
    read_session,
    require_session,
    session_record,
)
from helix_stream.store._turns import Snapshot, TurnWrite, TurnWriteResult

__all__ = ["SQLiteStore"]


class SQLiteStore(SQLiteDatabase):
    """A :class:`~helix_stream.store.Store` in one SQLite file (or ``":memory:"``).

    Several ``SQLiteStore`` objects (or processes) may open the same file; each sees what the
    others committed. Call :meth:`close` when done: it closes the connections and stops the
    worker thread (which only serves calls that found the file locked).

    Args:
        path: The database file (created on first use), or ``":memory:"``.
        busy_timeout: Seconds a write waits for another connection's write lock.
        max_queued_items: The most undelivered context items a session's queue may hold; an
            ``enqueue_context`` that would pass it is refused whole.

    Attributes:
        write_transactions: Count of write transactions this object committed. Calls that
            changed nothing (an existing session, a failed compare-and-set, a key dedupe, an
            empty commit, a rewind to the last seq) roll back and are not counted; neither is
            creating the schema.
    """

    async def create_session(
        self,
        session_id: str,
        *,
        agent_name: str,
        parent_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> SessionRecord:
        """Create the session if it does not exist; return it either way (never overwrites)."""
        check_session_id(session_id)
        meta_text = encode(dict(meta or {}))

        def tx(conn: sqlite3.Connection) -> tuple[SessionRecord, bool]:
            now = time.time()
            inserted = conn.execute(
                "INSERT OR IGNORE INTO sessions VALUES (?,?,?,?,?,?,?)",
                (session_id, agent_name, "idle", parent_id, now, now, meta_text),
            ).rowcount
            return read_session(conn, session_id), inserted == 1

        return await self._write(tx)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        check_session_id(session_id)

        def read(conn: sqlite3.Connection) -> SessionRecord | None:
            row = conn.execute(SQL_SESSION, (session_id,)).fetchone()
            return None if row is None else session_record(row)

        return await self._run(read)

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status; with ``expect``, only if the current one is among them."""
        check_session_id(session_id)
        check_status(status)
        expected = check_expect(expect)

        def tx(conn: sqlite3.Connection) -> tuple[bool, bool]:
            row = conn.execute("SELECT status FROM sessions WHERE id = ?", (session_id,)).fetchone()
            if row is None:
                raise session_not_found(session_id)
            if expected is not None and row[0] not in expected:
                return False, False
            conn.execute(
                "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?",
                (status, time.time(), session_id),
            )
            return True, True

        return await self._write(tx)

    async def update_session_meta(self, session_id: str, patch: Mapping[str, Any]) -> SessionRecord:
        """Merge ``patch`` into ``meta`` (``None`` removes a key); return the new record."""
        check_session_id(session_id)
        patch = dict(patch)

        def tx(conn: sqlite3.Connection) -> tuple[SessionRecord, bool]:
            record = read_session(conn, session_id)
            merged, changed = merge_meta(record.meta, patch)
            if changed:
                conn.execute(
                    "UPDATE sessions SET meta = ?, updated_at = ? WHERE id = ?",
                    (encode(merged), time.time(), session_id),
                )
                record = read_session(conn, session_id)
            return record, changed

        return await self._write(tx)

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[JSON],
        *,
        checkpoint: Checkpoint | None = None,
    ) -> list[LogRecord]:
        """Append messages and, optionally, a checkpoint at the last seq, in one transaction."""
        check_session_id(session_id)
        messages = list(messages)

        def tx(conn: sqlite3.Connection) -> tuple[list[LogRecord], bool]:
            require_session(conn, session_id)
            seq, now = last_seq(conn, session_id), time.time()
            records = [
                _sqlite_turns.append_log(conn, session_id, seq + i, message_role(m), m, now)
                for i, m in enumerate(messages, start=1)
            ]
            if checkpoint is not None:
                cp_id = checkpoint_id(checkpoint.id)
                if conn.execute(
                    "SELECT 1 FROM checkpoints WHERE session_id = ? AND id = ?",
                    (session_id, cp_id),
                ).fetchone():
                    raise duplicate_checkpoint(session_id, cp_id)
                conn.execute(
                    "INSERT INTO checkpoints (session_id, id, step_number, log_seq, state,"
                    " created_at) VALUES (?,?,?,?,?,?)",
                    (
                        session_id,
                        cp_id,
                        checkpoint.step_number,
                        seq + len(records),
                        encode(checkpoint.state),
                        now,
                    ),
                )
            return records, bool(records) or checkpoint is not None

        return await self._write(tx)

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        check_session_id(session_id)

        def read(conn: sqlite3.Connection) -> list[LogRecord]:
            require_session(conn, session_id)
            return [
                LogRecord(seq=seq, role=role, payload=decode(payload), created_at=at)
                for seq, role, payload, at in conn.execute(SQL_READ_LOG, (session_id, after_seq))
            ]

        return await self._run(read)

    async def last_seq(self, session_id: str) -> int:
        """The seq of the last log record; 0 when the log is empty."""
        check_session_id(session_id)

        def read(conn: sqlite3.Connection) -> int:
            require_session(conn, session_id)
            return last_seq(conn, session_id)

        return await self._run(read)

    async def enqueue_context(
        self,
        session_id: str,
        items: Sequence[JSON],
        *,
        source: str,
        origin: Mapping[str, Any],
        key: str | None = None,
        on_key_conflict: Literal["raise", "ignore"] = "raise",
    ) -> int:
        """Queue items for the next context pass; return how many were recorded.

        Items with no key are always recorded. An empty ``items`` records nothing and
        returns 0 (it leaves no key behind either, since there was no request to remember).
        """
        check_session_id(session_id)
        check_key(key)
        check_conflict_mode(on_key_conflict)
        items, origin = list(items), dict(origin)

        def tx(conn: sqlite3.Connection) -> tuple[int, bool]:
            require_session(conn, session_id)
            digest = items_digest(items) if key is not None else ""
            if key is not None:
                row = conn.execute(
                    "SELECT items_sha256 FROM context_keys WHERE session_id = ? AND key = ?",
                    (session_id, key),
                ).fetchone()
                if row is not None:
                    if row[0] == digest or on_key_conflict == "ignore":
                        return 0, False
                    raise key_conflict(session_id, key)
            if not items:
                return 0, False
            queued = pending_items(conn, session_id)
            if queued + len(items) > self.max_queued_items:
                raise queue_full(session_id, queued, len(items), self.max_queued_items)
            queue_id = conn.execute(
                "INSERT INTO context_queue (session_id, items, source, key, origin, created_at)"
                " VALUES (?,?,?,?,?,?)",
                (session_id, encode(items), source, key, encode(origin), time.time()),
            ).lastrowid
            if key is not None:
                conn.execute(
                    "INSERT INTO context_keys VALUES (?,?,?,?)", (session_id, key, digest, queue_id)
                )
            return len(items), True

        return await self._write(tx)

    async def pending_context(self, session_id: str) -> list[QueueEntry]:
        """The queue entries not yet delivered, in id order."""
        check_session_id(session_id)
        return await self._queue(session_id, SQL_PENDING)

    async def delivered_context(self, session_id: str) -> list[QueueEntry]:
        """The queue entries already delivered, in id order."""
        check_session_id(session_id)
        return await self._queue(session_id, SQL_DELIVERED)

    async def _queue(self, session_id: str, sql: str) -> list[QueueEntry]:
        def read(conn: sqlite3.Connection) -> list[QueueEntry]:
            require_session(conn, session_id)
            return queue_entries_from_rows(conn.execute(sql, (session_id,)))

        return await self._run(read)

    async def commit_context(
        self, session_id: str, extra_rows: Sequence[JSON] = ()
    ) -> list[LogRecord]:
        """Turn every queued entry, then ``extra_rows``, into context rows in one transaction."""
        check_session_id(session_id)
        write = TurnWrite(deliver_queue=True, rows=list(extra_rows))
        return (await self.write_turn(session_id, write)).records

    async def read_snapshot(self, session_id: str) -> Snapshot:
        """The session, its log, its last checkpoint and its queue, in one read."""
        check_session_id(session_id)
        return await self._run(lambda conn: _sqlite_turns.read_snapshot(conn, session_id))

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        """Apply one turn boundary in one transaction (see ``TurnWrite``)."""
        check_session_id(session_id)
        return await self._write(lambda conn: _sqlite_turns.write_turn(conn, session_id, write))

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        check_session_id(session_id)

        def read(conn: sqlite3.Connection) -> list[Checkpoint]:
            require_session(conn, session_id)
            rows = conn.execute(
                "SELECT id, step_number, log_seq, state, created_at FROM checkpoints"
                " WHERE session_id = ? ORDER BY ord",
                (session_id,),
            )
            return checkpoints_from_rows(session_id, rows)

        return await self._run(read)

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        """Truncate the log after ``to_seq`` and fix checkpoints and queue (see ``Store``)."""
        check_session_id(session_id)
        return await self._write(lambda conn: _sqlite_history.rewind(conn, session_id, to_seq))

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        """Make ``new_id`` from ``source_id``'s log and checkpoints up to ``upto_seq``."""
        check_session_id(source_id)
        check_session_id(new_id)
        return await self._write(
            lambda conn: _sqlite_history.branch(conn, source_id, new_id, upto_seq, agent_name)
        )
