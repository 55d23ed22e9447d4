"""SQLiteStore: the embedded default Store, on stdlib sqlite3 (WAL, one transaction per write).

sqlite3 calls block, so all of them run on one worker thread the store owns; the event loop
only awaits that thread. The thread holds the store's single connection, so sqlite3's
``check_same_thread`` guard stays on and would catch any call that strayed onto another thread.

Every write method is one ``BEGIN IMMEDIATE … COMMIT``: IMMEDIATE takes SQLite's write lock
up front, so a read-then-write such as the request-key check cannot interleave with another
writer — not another coroutine of this store (they already queue on the one thread), and not
another ``SQLiteStore`` or process on the same file (it waits up to ``busy_timeout``). Any
error rolls the whole transaction back.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from helix_stream.errors import FrameworkNotSupportedError
from helix_stream.store._memory import (
    check_conflict_mode,
    check_expect,
    check_status,
    checkpoint_id,
    checkpoint_record,
    context_row,
    duplicate_checkpoint,
    encode,
    items_digest,
    key_conflict,
    log_record,
    message_role,
    queue_entry,
    session_not_found,
    session_record,
)
from helix_stream.store._protocol import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    SessionRecord,
    SessionStatus,
)

__all__ = ["SQLiteStore"]

_T = TypeVar("_T")

SCHEMA_VERSION = 1

# Payloads are JSON text. Every per-session lookup is served by an index: the log's primary
# key (session_id, seq) answers read_log(after_seq) and MAX(seq); the partial index answers
# pending_context without touching delivered entries, however long the history.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY, agent_name TEXT NOT NULL, status TEXT NOT NULL, parent_id TEXT,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, meta TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS log (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
        payload TEXT NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (session_id, seq))""",
    """CREATE TABLE IF NOT EXISTS context_queue (
        id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, items TEXT NOT NULL,
        source TEXT NOT NULL, key TEXT, origin TEXT NOT NULL, created_at REAL NOT NULL,
        delivered_seq INTEGER)""",
    """CREATE INDEX IF NOT EXISTS context_queue_pending ON context_queue (session_id, id)
        WHERE delivered_seq IS NULL""",
    """CREATE TABLE IF NOT EXISTS context_keys (
        session_id TEXT NOT NULL, key TEXT NOT NULL, items_sha256 TEXT NOT NULL,
        queue_id INTEGER NOT NULL, PRIMARY KEY (session_id, key)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS checkpoints (
        ord INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, id TEXT NOT NULL,
        step_number INTEGER NOT NULL, log_seq INTEGER NOT NULL, state TEXT NOT NULL,
        created_at REAL NOT NULL, UNIQUE (session_id, id))""",
    "CREATE INDEX IF NOT EXISTS checkpoints_by_session ON checkpoints (session_id, ord)",
)

SQL_READ_LOG = (
    "SELECT seq, role, payload, created_at FROM log WHERE session_id = ? AND seq > ? ORDER BY seq"
)
SQL_PENDING = (
    "SELECT id, items, source, key, origin, created_at, delivered_seq FROM context_queue"
    " WHERE session_id = ? AND delivered_seq IS NULL ORDER BY id"
)
SQL_LAST_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM log WHERE session_id = ?"
_SQL_SESSION = (
    "SELECT id, agent_name, status, parent_id, created_at, updated_at, meta"
    " FROM sessions WHERE id = ?"
)
_SQL_INSERT_LOG = "INSERT INTO log (session_id, seq, role, payload, created_at) VALUES (?,?,?,?,?)"


def _session_record(row: tuple[Any, ...]) -> SessionRecord:
    sid, agent_name, status, parent_id, created_at, updated_at, meta = row
    return session_record(
        id=sid,
        agent_name=agent_name,
        status=status,
        parent_id=parent_id,
        created_at=created_at,
        updated_at=updated_at,
        meta=json.loads(meta),
    )


class SQLiteStore:
    """A :class:`~helix_stream.store.Store` in one SQLite file (or ``":memory:"``).

    Several ``SQLiteStore`` objects (or processes) may open the same file; each sees what the
    others committed. Call :meth:`close` when done: it closes the connection and stops the
    worker thread.

    Args:
        path: The database file (created on first use), or ``":memory:"``.
        busy_timeout: Seconds a write waits for another connection's write lock.

    Attributes:
        write_transactions: Count of write transactions this object committed. Calls that
            changed nothing (an existing session, a failed compare-and-set, a key dedupe, an
            empty commit) roll back and are not counted; neither is creating the schema.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 10.0) -> None:
        self.path = os.fspath(path)
        self.busy_timeout = busy_timeout
        self.write_transactions = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="helix-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._closed = False

    # -- plumbing (everything below `_call` runs on the worker thread) ---------------------

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise RuntimeError(f"this SQLiteStore ({self.path}) is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._call, fn)

    async def _write(self, fn: Callable[[sqlite3.Connection], tuple[_T, bool]]) -> _T:
        """Run ``fn`` in one IMMEDIATE transaction; it returns (result, wrote_anything)."""
        return await self._run(lambda conn: self._transaction(conn, fn))

    def _call(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed and self._conn is None:
            raise RuntimeError(f"this SQLiteStore ({self.path}) is closed")
        return fn(self._conn or self._open())

    def _transaction(
        self,
        conn: sqlite3.Connection,
        fn: Callable[[sqlite3.Connection], tuple[_T, bool]],
        *,
        count: bool = True,
    ) -> _T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result, changed = fn(conn)
            # Nothing to keep: roll back rather than commit an empty transaction, so the
            # counter and the WAL only see real writes.
            conn.execute("COMMIT" if changed else "ROLLBACK")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if changed and count:
            self.write_transactions += 1
        return result

    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: sqlite3 must not open transactions behind our back; each
        # write method issues its own BEGIN IMMEDIATE.
        conn = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: no fsync per commit. A crashed process loses nothing; a power cut
            # may lose the last commits but never leaves one half-applied.
            conn.execute("PRAGMA synchronous=NORMAL")
            # Creating the schema is not one of the caller's writes: not counted.
            self._transaction(conn, self._create_schema, count=False)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _create_schema(self, conn: sqlite3.Connection) -> tuple[None, bool]:
        for statement in _SCHEMA:
            conn.execute(statement)
        row = conn.execute("SELECT version FROM schema_version").fetchone()
        if row is None:
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise FrameworkNotSupportedError(
                f"{self.path} has store schema version {row[0]}; this helix_stream reads "
                f"version {SCHEMA_VERSION}. Use the helix_stream release that wrote it."
            )
        return None, True

    def _close_connection(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @staticmethod
    def _require(conn: sqlite3.Connection, session_id: str) -> None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise session_not_found(session_id)

    @staticmethod
    def _last_seq(conn: sqlite3.Connection, session_id: str) -> int:
        return int(conn.execute(SQL_LAST_SEQ, (session_id,)).fetchone()[0])

    @staticmethod
    def _append(
        conn: sqlite3.Connection, session_id: str, seq: int, role: str, payload: JSON, now: float
    ) -> LogRecord:
        text = encode(payload)  # inside the transaction: a bad payload rolls back the rest
        conn.execute(_SQL_INSERT_LOG, (session_id, seq, role, text, now))
        return log_record(seq=seq, role=role, payload=json.loads(text), created_at=now)

    # -- the Store protocol -------------------------------------------------------------------

    async def create_session(
        self,
        session_id: str,
        *,
        agent_name: str,
        parent_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> SessionRecord:
        """Create the session if it does not exist; return it either way (never overwrites)."""
        meta_dict = dict(meta or {})

        def tx(conn: sqlite3.Connection) -> tuple[SessionRecord, bool]:
            now = time.time()
            inserted = conn.execute(
                "INSERT OR IGNORE INTO sessions VALUES (?,?,?,?,?,?,?)",
                (session_id, agent_name, "idle", parent_id, now, now, encode(meta_dict)),
            ).rowcount
            record = _session_record(conn.execute(_SQL_SESSION, (session_id,)).fetchone())
            return record, inserted == 1

        return await self._write(tx)

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""

        def read(conn: sqlite3.Connection) -> SessionRecord | None:
            row = conn.execute(_SQL_SESSION, (session_id,)).fetchone()
            return None if row is None else _session_record(row)

        return await self._run(read)

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status; with ``expect``, only if the current one is among them."""
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

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[JSON],
        *,
        checkpoint: Checkpoint | None = None,
    ) -> list[LogRecord]:
        """Append messages and, optionally, a checkpoint at the last seq, in one transaction."""
        messages = list(messages)

        def tx(conn: sqlite3.Connection) -> tuple[list[LogRecord], bool]:
            self._require(conn, session_id)
            seq, now = self._last_seq(conn, session_id), time.time()
            records = [
                self._append(conn, session_id, seq + i, message_role(m), m, now)
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

        def read(conn: sqlite3.Connection) -> list[LogRecord]:
            self._require(conn, session_id)
            return [
                log_record(seq=seq, role=role, payload=json.loads(payload), created_at=at)
                for seq, role, payload, at in conn.execute(SQL_READ_LOG, (session_id, after_seq))
            ]

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
        check_conflict_mode(on_key_conflict)
        items, origin = list(items), dict(origin)

        def tx(conn: sqlite3.Connection) -> tuple[int, bool]:
            self._require(conn, session_id)
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

        def read(conn: sqlite3.Connection) -> list[QueueEntry]:
            self._require(conn, session_id)
            rows = conn.execute(SQL_PENDING, (session_id,))
            return [
                queue_entry(
                    id=qid,
                    items=json.loads(items),
                    source=source,
                    key=key,
                    origin=json.loads(origin),
                    created_at=at,
                    delivered_seq=delivered,
                )
                for qid, items, source, key, origin, at, delivered in rows
            ]

        return await self._run(read)

    async def commit_context(
        self, session_id: str, extra_rows: Sequence[JSON] = ()
    ) -> list[LogRecord]:
        """Turn every queued entry, then ``extra_rows``, into context rows in one transaction."""
        extra = list(extra_rows)

        def tx(conn: sqlite3.Connection) -> tuple[list[LogRecord], bool]:
            self._require(conn, session_id)
            entries = conn.execute(SQL_PENDING, (session_id,)).fetchall()
            if not entries and not extra:
                return [], False
            seq, now = self._last_seq(conn, session_id), time.time()
            records: list[LogRecord] = []
            delivered: list[tuple[int, int]] = []
            for qid, items, source, key, origin, _, _ in entries:
                delivered.append((seq + len(records) + 1, qid))
                origin_dict = json.loads(origin)
                for item in json.loads(items):
                    row = context_row(
                        item, source=source, origin=origin_dict, queue_id=qid, key=key
                    )
                    records.append(
                        self._append(conn, session_id, seq + len(records) + 1, "context", row, now)
                    )
            for row in extra:
                records.append(
                    self._append(conn, session_id, seq + len(records) + 1, "context", row, now)
                )
            conn.executemany("UPDATE context_queue SET delivered_seq = ? WHERE id = ?", delivered)
            return records, True

        return await self._write(tx)

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""

        def read(conn: sqlite3.Connection) -> list[Checkpoint]:
            self._require(conn, session_id)
            rows = conn.execute(
                "SELECT id, step_number, log_seq, state, created_at FROM checkpoints"
                " WHERE session_id = ? ORDER BY ord",
                (session_id,),
            )
            return [
                checkpoint_record(
                    id=cp_id,
                    session_id=session_id,
                    step_number=step,
                    log_seq=log_seq,
                    state=json.loads(state),
                    created_at=at,
                )
                for cp_id, step, log_seq, state, at in rows
            ]

        return await self._run(read)

    async def close(self) -> None:
        """Close the connection and stop the worker thread. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            # Queued behind any call still in flight, so those finish first.
            await asyncio.get_running_loop().run_in_executor(self._executor, self._close_connection)
        finally:
            self._executor.shutdown(wait=False)
