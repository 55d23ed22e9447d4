"""SQLiteStore's plumbing: the connections and their transactions.

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
which is also what makes a call that met a lock safe to run again on the thread. A full disk
is the store being away for a while: ``StoreUnavailableError`` (503, retryable), translated
in ``_run`` and nowhere else.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from helix_stream._limits import MAX_QUEUED_ITEMS
from helix_stream.errors import StoreUnavailableError
from helix_stream.store._shared import (
    LEASE_RENEW_SECONDS,
    LEASE_SECONDS,
    check_lease_options,
    check_queue_cap,
)
from helix_stream.store.sqlite._schema import create_schema

__all__ = ["SQLiteDatabase"]

_T = TypeVar("_T")

logger = logging.getLogger("helix_stream.store")

CHECKPOINT_EVERY = 200
"""Write transactions between two WAL checkpoints (SQLite's own default is about every 1,000
pages; a turn writes a few)."""


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
        lease_seconds: float = LEASE_SECONDS,
        lease_renew_seconds: float = LEASE_RENEW_SECONDS,
    ) -> None:
        self.path = os.fspath(path)
        self.busy_timeout = busy_timeout
        self.max_queued_items = check_queue_cap(max_queued_items)
        self.lease_seconds, self.lease_renew_seconds = check_lease_options(
            lease_seconds, lease_renew_seconds
        )
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
                self._raise_translated(exc)
                raise
        try:
            return await loop.run_in_executor(self._executor, self._on_thread, fn)
        except sqlite3.Error as exc:
            self._raise_translated(exc)
            raise

    def _raise_translated(self, exc: sqlite3.Error) -> None:
        """The one place SQLite errors become the package's: a full disk (SQLITE_FULL) is a
        retryable :class:`~helix_stream.errors.StoreUnavailableError`; the rest stay as they
        are. The transaction was rolled back: nothing was written."""
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_FULL:
            # The file's path is for the operator's log only: the error's text may reach an
            # HTTP client (a 503 body), which must not learn the server's paths.
            logger.warning("the SQLite store %s cannot grow: the disk is full", self.path)
            raise StoreUnavailableError(
                "The SQLite store cannot grow: the disk is full. Nothing was written (the "
                "database is intact); free space, then retry."
            ) from exc

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
        create_schema(conn, self.path)
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
