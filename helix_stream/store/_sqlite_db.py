"""SQLiteStore's plumbing: the schema, the connections and their transactions, and the few
per-session lookups every transaction starts with.

A store call is a few hundred microseconds of work (WAL, no fsync per commit, a warm page
cache), so it runs right on the event loop's thread, on a connection that never waits for a
lock. That is far cheaper than a hop to a worker thread and back: under load each hop waits for
the GIL, up to the interpreter's 5 ms switch interval per handoff, several times per call (it
tripled the time to first text of 200 concurrent chats). Only a call that finds another
connection's write lock — another process or store on the same file — runs again on the
store's worker thread, whose connection waits up to ``busy_timeout``; the loop never blocks on
a lock.

Every write is one ``BEGIN IMMEDIATE … COMMIT``: IMMEDIATE takes SQLite's write lock up front,
so a read-then-write such as the request-key check cannot interleave with another writer — not
another coroutine of this store (a call on the loop runs whole before the next starts), and not
another ``SQLiteStore`` or process on the same file. Any error rolls the whole transaction back,
which is also what makes a call that met a lock safe to run again on the thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from helix_stream._limits import MAX_QUEUED_ITEMS
from helix_stream.errors import FrameworkNotSupportedError
from helix_stream.store._protocol import SessionRecord
from helix_stream.store._shared import check_queue_cap, decode, session_not_found

__all__ = [
    "SCHEMA_VERSION",
    "SQL_DELIVERED",
    "SQL_LAST_SEQ",
    "SQL_PENDING",
    "SQL_READ_LOG",
    "SQL_SESSION",
    "SQLiteDatabase",
    "last_seq",
    "pending_items",
    "read_session",
    "require_session",
    "session_record",
]

_T = TypeVar("_T")

logger = logging.getLogger("helix_stream.store")

CHECKPOINT_EVERY = 200
"""Write transactions between two WAL checkpoints (SQLite's own default is about every 1,000
pages; a turn writes a few)."""

SCHEMA_VERSION = 1

# Payloads are JSON text. Every per-session lookup is served by an index: the log's primary
# key (session_id, seq) answers read_log(after_seq), MAX(seq) and a rewind's or branch's range;
# the partial index answers pending_context without touching delivered entries, however long
# the history; context_queue_by_session serves delivered_context and a rewind's queue scan.
# Adding an index is compatible both ways, so context_queue_by_session did not need a new
# SCHEMA_VERSION: an older file gets it when opened.
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
    "CREATE INDEX IF NOT EXISTS context_queue_by_session ON context_queue (session_id, id)",
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
_QUEUE_COLUMNS = "SELECT id, items, source, key, origin, created_at, delivered_seq"
SQL_PENDING = (
    f"{_QUEUE_COLUMNS} FROM context_queue WHERE session_id = ? AND delivered_seq IS NULL"
    " ORDER BY id"
)
SQL_DELIVERED = (
    f"{_QUEUE_COLUMNS} FROM context_queue WHERE session_id = ? AND delivered_seq IS NOT NULL"
    " ORDER BY id"
)
SQL_LAST_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM log WHERE session_id = ?"
SQL_SESSION = (
    "SELECT id, agent_name, status, parent_id, created_at, updated_at, meta"
    " FROM sessions WHERE id = ?"
)


def session_record(row: tuple[Any, ...]) -> SessionRecord:
    """The record of a ``SQL_SESSION`` row."""
    sid, agent_name, status, parent_id, created_at, updated_at, meta = row
    return SessionRecord(
        id=sid,
        agent_name=agent_name,
        status=status,
        parent_id=parent_id,
        created_at=created_at,
        updated_at=updated_at,
        meta=decode(meta),
    )


def read_session(conn: sqlite3.Connection, session_id: str) -> SessionRecord:
    """The session's record; SessionNotFoundError if there is none."""
    row = conn.execute(SQL_SESSION, (session_id,)).fetchone()
    if row is None:
        raise session_not_found(session_id)
    return session_record(row)


def require_session(conn: sqlite3.Connection, session_id: str) -> None:
    """SessionNotFoundError unless the session exists."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise session_not_found(session_id)


def last_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The seq of the session's last log record; 0 for an empty log."""
    return int(conn.execute(SQL_LAST_SEQ, (session_id,)).fetchone()[0])


def pending_items(conn: sqlite3.Connection, session_id: str) -> int:
    """How many items the session's undelivered queue entries hold."""
    row = conn.execute(
        "SELECT COALESCE(SUM(json_array_length(items)), 0) FROM context_queue"
        " WHERE session_id = ? AND delivered_seq IS NULL",
        (session_id,),
    ).fetchone()
    return int(row[0])


class SQLiteDatabase:
    """One SQLite file, reached from the event loop (and a worker thread when it is locked);
    the base of ``SQLiteStore``.

    Attributes:
        path: The database file, or ``":memory:"``.
        busy_timeout: Seconds a write waits for another connection's write lock.
        write_transactions: Count of write transactions this object committed.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 10.0,
        max_queued_items: int = MAX_QUEUED_ITEMS,
    ) -> None:
        self.path = os.fspath(path)
        self.busy_timeout = busy_timeout
        self.max_queued_items = check_queue_cap(max_queued_items)
        self.write_transactions = 0
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="helix-sqlite")
        self._loop_conn: sqlite3.Connection | None = None  # used on the event loop's thread
        self._checkpointed_at = 0  # write_transactions when the last checkpoint was queued
        self._thread_conn: sqlite3.Connection | None = None  # used on the worker thread
        self._closed = False

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``fn`` on the loop's connection; if it meets a lock, again on the thread's."""
        if self._closed:
            raise RuntimeError(f"this SQLiteStore ({self.path}) is closed")
        loop = asyncio.get_running_loop()
        if self._loop_conn is None:
            # Opening may wait (WAL switch, schema): on the thread, once.
            await loop.run_in_executor(self._executor, self._open_connections)
        conn = self._loop_conn
        if conn is None:  # closed while it opened
            raise RuntimeError(f"this SQLiteStore ({self.path}) is closed")
        try:
            return fn(conn)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
        return await loop.run_in_executor(self._executor, self._on_thread, fn)

    async def _write(self, fn: Callable[[sqlite3.Connection], tuple[_T, bool]]) -> _T:
        """Run ``fn`` in one IMMEDIATE transaction; it returns (result, wrote_anything)."""
        result = await self._run(lambda conn: self._transaction(conn, fn))
        if self.write_transactions - self._checkpointed_at >= CHECKPOINT_EVERY and not self._closed:
            # The loop's connection never checkpoints (a checkpoint fsyncs): the thread does,
            # in the background, queued behind the calls already there.
            self._checkpointed_at = self.write_transactions
            asyncio.get_running_loop().run_in_executor(self._executor, self._checkpoint)
        return result

    def _checkpoint(self) -> None:
        try:
            if self._thread_conn is not None:
                self._thread_conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:  # busy or closing: the next one catches up
            logger.debug("WAL checkpoint of %s skipped", self.path, exc_info=True)

    def _on_thread(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._thread_conn is None:
            raise RuntimeError(f"this SQLiteStore ({self.path}) is closed")
        return fn(self._thread_conn)

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

    def _open_connections(self) -> None:
        if self._loop_conn is not None:
            return
        conn = self._connect(self.busy_timeout)
        try:
            _enable_wal(conn, self.busy_timeout)  # a property of the file, kept
            # Creating the schema is not one of the caller's writes: not counted.
            self._transaction(conn, self._create_schema, count=False)
        except BaseException:
            conn.close()
            raise
        self._thread_conn = conn
        # ":memory:" is one database per connection: both paths share it (never locked).
        if self.path == ":memory:":
            self._loop_conn = conn
            return
        self._loop_conn = self._connect(0.0)
        # Checkpoints are the thread's (see _write): the loop's commits never wait for one.
        self._loop_conn.execute("PRAGMA wal_autocheckpoint=0")

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        # isolation_level=None: sqlite3 must not open transactions behind our back; each
        # write method issues its own BEGIN IMMEDIATE. check_same_thread=False: the loop's
        # connection is opened on the worker thread and used on the loop's.
        conn = sqlite3.connect(
            self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        # WAL + NORMAL: no fsync per commit. A crashed process loses nothing; a power cut may
        # lose the last commits but never leaves one half-applied.
        conn.execute("PRAGMA synchronous=NORMAL")
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

    def _close_connections(self) -> None:
        if self._loop_conn is not None:
            self._loop_conn.close()  # for ":memory:", the thread's too (a second close is a no-op)
        if self._thread_conn is not None:
            self._thread_conn.close()
        self._loop_conn = self._thread_conn = None

    async def close(self) -> None:
        """Close the connections and stop the worker thread. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            # Queued behind any call still in flight on the thread, so those finish first.
            await asyncio.get_running_loop().run_in_executor(
                self._executor, self._close_connections
            )
        finally:
            self._executor.shutdown(wait=False)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    """Another connection holds the lock this call needs (SQLITE_BUSY or SQLITE_LOCKED)."""
    # The primary code is the low byte (SQLITE_BUSY_SNAPSHOT and friends are busy too).
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _enable_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """Switch the file to WAL, waiting out another connection doing the same.

    Changing the journal mode needs an exclusive lock, and SQLite may answer "database is
    locked" at once instead of calling the busy handler (two stores opening one new file
    together): retry, up to ``busy_timeout``.
    """
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
