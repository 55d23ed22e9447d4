"""PostgresStore's plumbing: the lazy psycopg import, the pool, and its transactions.

psycopg is imported when a ``PostgresStore`` is made, never by ``import helix_stream``. The
pool (``psycopg_pool.AsyncConnectionPool``) opens on first use, after :func:`migrate` has run
on a connection of its own; its connections are in autocommit mode, so a read is its
statements alone and a write is an explicit ``BEGIN … COMMIT`` (:meth:`PostgresDatabase._write`).

Isolation is READ COMMITTED, with the session row as the lock: a turn write or a rewind starts
with ``SELECT … FOR NO KEY UPDATE`` on that row (``_read``), so writers of one session queue
behind each other across processes, and each later statement sees everything the previous
holder committed. ``enqueue_context`` takes no row lock (only an advisory lock shared with the
session's other enqueues, for the queue cap): the ``context_keys`` primary key decides a
request-key race, and an entry committed during a context pass simply waits for the next one.

**Lost connections** (a server restart, a terminated backend, a failover): every call runs
through ``_retry.with_retry``, which runs it once more on a fresh connection when its
connection turned out dead; a write only when its first try cannot have committed. Every write
transaction reads its own transaction id first (``txid_current()``, in the same round trip as
``BEGIN``), so a ``COMMIT`` whose reply was lost can be settled.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from helix_stream._limits import MAX_QUEUED_ITEMS
from helix_stream.errors import FrameworkNotSupportedError, StoreUnavailableError
from helix_stream.store._shared import (
    LEASE_RENEW_SECONDS,
    LEASE_SECONDS,
    check_lease_options,
    check_queue_cap,
    session_not_found,
)
from helix_stream.store.postgres._retry import SQL_XID, Attempt, with_retry
from helix_stream.store.postgres._schema import migrate

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor, AsyncPipeline
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresDatabase", "Row", "Tx"]

_T = TypeVar("_T")
Row = tuple[Any, ...]
Params = Sequence[Any] | Mapping[str, Any]

# Plain names only: the schema is spliced into every statement and into string literals.
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# BEGIN and the transaction's id in one simple query (SQL_XID: see _retry).
_SQL_BEGIN_XID = f"BEGIN; {SQL_XID}"


async def _rollback_quietly(conn: AsyncConnection[TupleRow]) -> None:
    """End a failed transaction; if even that fails (a lost connection, a cancellation), the
    pool rolls back or drops the connection when it comes back."""
    if conn.closed:
        return
    with contextlib.suppress(Exception):  # the error that brought us here is the one to raise
        await conn.execute("ROLLBACK")


def load_psycopg() -> tuple[ModuleType, ModuleType]:
    """``(psycopg, psycopg_pool)``, imported now; a clear error when the extra is missing."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise FrameworkNotSupportedError(
            "PostgresStore needs psycopg 3 and psycopg_pool, which are not installed. "
            "Install them with: pip install 'helix-stream[postgres]'"
        ) from exc
    return psycopg, psycopg_pool


@dataclass(frozen=True, slots=True)
class Tx:
    """A connection and the store's schema: runs statements written with ``{s}.table``."""

    conn: AsyncConnection[TupleRow]
    schema: str  # the quoted identifier
    pipeline: AsyncPipeline | None = None  # set in a pipelined write transaction

    async def send(self, sql: str, params: Params = ()) -> AsyncCursor[TupleRow]:
        """Send one statement; in pipeline mode, without waiting for its result: it goes out
        with the next statement whose result is read."""
        return await self.conn.execute(sql.replace("{s}", self.schema), params)

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return its row count (use ``send`` when the count is not needed:
        reading it costs a round trip in pipeline mode)."""
        cur = await self.conn.execute(sql.replace("{s}", self.schema), params)
        if self.pipeline is not None:
            await self.pipeline.sync()  # the count is known once the result is in
        return cur.rowcount

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        cur = await self.conn.execute(sql.replace("{s}", self.schema), params)
        return await cur.fetchall()

    async def one(self, sql: str, params: Params = ()) -> Row | None:
        cur = await self.conn.execute(sql.replace("{s}", self.schema), params)
        return await cur.fetchone()

    async def all_of_session(self, sql: str, session_id: str, params: Params = ()) -> list[Row]:
        """The rows of a read that LEFT JOINs from the session's row, without the all-NULL one.

        The join keeps one all-NULL row when the session exists but has nothing to list, so
        a read is one round trip and still tells "no such session" (no row) from "empty".
        """
        rows = await self.all(sql, params)
        if not rows:
            raise session_not_found(session_id)
        return [row for row in rows if row[0] is not None]


class PostgresDatabase:
    """A schema in a PostgreSQL database reached through a pool; the base of PostgresStore.

    Attributes:
        schema: The schema the tables live in.
        application_name: What the store's connections show in ``pg_stat_activity``.
        max_queued_items: The most undelivered context items a session's queue holds.
        write_transactions: Count of write transactions this object committed.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "helix",
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        application_name: str | None = None,
        max_queued_items: int = MAX_QUEUED_ITEMS,
        lease_seconds: float = LEASE_SECONDS,
        lease_renew_seconds: float = LEASE_RENEW_SECONDS,
    ) -> None:
        if not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"schema must be a plain identifier (letters, digits, _; at most 63), "
                f"not {schema!r}"
            )
        self._psycopg, self._pool_module = load_psycopg()
        self.schema = schema
        self.max_queued_items = check_queue_cap(max_queued_items)
        self.lease_seconds, self.lease_renew_seconds = check_lease_options(
            lease_seconds, lease_renew_seconds
        )
        self.write_transactions = 0
        self._dsn = dsn
        self._ident = self._psycopg.sql.Identifier(schema).as_string(None)
        self._connect_kwargs: dict[str, Any] = {"autocommit": True}
        self.application_name = self._application_name(dsn, application_name)
        self._pool: AsyncConnectionPool[AsyncConnection[TupleRow]] = (
            self._pool_module.AsyncConnectionPool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                open=False,
                kwargs=self._connect_kwargs,
                configure=self._configure,
                name=f"helix-{schema}",
            )
        )
        self._open_lock = asyncio.Lock()
        self._opened = False
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(schema={self.schema!r})"

    def _application_name(self, dsn: str, given: str | None) -> str:
        """The name the connections report: ``given``, else the DSN's, else
        ``helix_stream:<schema>`` (so an operator, or a test, can tell them apart)."""
        if given is None:
            from_dsn = self._psycopg.conninfo.conninfo_to_dict(dsn).get("application_name")
            if from_dsn:
                return str(from_dsn)
            # The server keeps 63 bytes of it; the schema name is ASCII.
            given = f"helix_stream:{self.schema}"[:63]
        self._connect_kwargs["application_name"] = given
        return given

    async def _configure(self, conn: AsyncConnection[TupleRow]) -> None:
        # json columns come back as their text, decoded by the same ``decode`` as every store.
        conn.adapters.register_loader("json", self._psycopg.types.string.TextLoader)

    async def migrate(self) -> list[int]:
        """Apply the schema migrations not yet applied; return their versions (often ``[]``).

        Every store does this on first use; call it to migrate ahead of a deploy.

        Raises:
            FrameworkNotSupportedError: the schema is newer than this release.
        """
        async with await self._connect() as conn:
            return await migrate(conn, self._ident, self.schema)

    async def _connect(self) -> AsyncConnection[TupleRow]:
        """A connection of its own, outside the pool, in autocommit mode (for a migration or
        a ``LISTEN``); the caller closes it."""
        self._check_open()
        conn: AsyncConnection[TupleRow] = await self._psycopg.AsyncConnection.connect(
            self._dsn, **self._connect_kwargs
        )
        return conn

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this PostgresStore (schema {self.schema!r}) is closed")

    async def _ensure_open(self) -> None:
        self._check_open()
        if self._opened:
            return
        async with self._open_lock:
            if not self._opened:
                try:
                    # On a connection of its own: its errors say what failed.
                    await self.migrate()
                except self._psycopg.OperationalError as exc:
                    raise StoreUnavailableError(
                        f"PostgreSQL could not be reached to open the store (schema "
                        f"{self.schema!r}): {type(exc).__name__}; nothing was written. Check "
                        "that the server is up and the DSN is right, then try again."
                    ) from exc
                await self._pool.open()
                self._opened = True

    async def _read(self, fn: Callable[[Tx], Awaitable[_T]], what: str = "a read") -> _T:
        """Run ``fn`` outside a transaction (each statement sees what is committed); after a
        lost connection, once more on a fresh one (``_retry``)."""
        await self._ensure_open()

        async def once(attempt: Attempt) -> _T:
            async with self._pool.connection() as conn:
                attempt.conn = conn
                return await fn(Tx(conn, self._ident))

        return await self._retrying(once, what)

    async def _write(
        self,
        fn: Callable[[Tx], Awaitable[tuple[_T, bool]]],
        what: str,
        *,
        pipeline: bool = False,
    ) -> _T:
        """Run ``fn`` in one transaction; it returns ``(result, wrote_anything)``.

        Nothing to keep rolls back rather than commits, so the counter sees only real writes;
        an error rolls everything back. The transaction learns its id first, in the same round
        trip as ``BEGIN``, so that a lost ``COMMIT`` can be settled; after a lost connection
        the write runs once more only if its first try cannot have committed
        (``_retry``). With ``pipeline``, statements go out without waiting for the
        previous one's result until ``fn`` reads one (``BEGIN`` and ``COMMIT`` included): fewer
        round trips, for some CPU in psycopg, which pays on the context pass's hot path.
        """
        await self._ensure_open()
        run = self._pipelined if pipeline else self._transaction

        async def once(attempt: Attempt) -> _T:
            async with self._pool.connection() as conn:
                attempt.conn, attempt.pid = conn, conn.info.backend_pid
                result, changed = await run(conn, fn, attempt)
            if changed:
                self.write_transactions += 1
            return result

        return await self._retrying(once, what)

    async def _transaction(
        self,
        conn: AsyncConnection[TupleRow],
        fn: Callable[[Tx], Awaitable[tuple[_T, bool]]],
        attempt: Attempt,
    ) -> tuple[_T, bool]:
        cur = await conn.execute(_SQL_BEGIN_XID)  # one simple query, one round trip
        cur.nextset()
        row = await cur.fetchone()
        assert row is not None
        try:
            result, changed = await fn(Tx(conn, self._ident))
            if changed:
                attempt.xid, attempt.result, attempt.committing = int(row[0]), result, True
                await conn.execute("COMMIT")
            else:
                await conn.execute("ROLLBACK")
        except BaseException:
            if not attempt.committing:
                await _rollback_quietly(conn)
            raise
        return result, changed

    async def _pipelined(
        self,
        conn: AsyncConnection[TupleRow],
        fn: Callable[[Tx], Awaitable[tuple[_T, bool]]],
        attempt: Attempt,
    ) -> tuple[_T, bool]:
        async with conn.pipeline() as pipeline, conn.transaction():
            xid = await conn.execute(SQL_XID)
            result, changed = await fn(Tx(conn, self._ident, pipeline))
            if not changed:
                raise self._psycopg.Rollback()
            row = await xid.fetchone()  # already in: fn has read a result sent after it
            assert row is not None
            attempt.xid, attempt.result, attempt.committing = int(row[0]), result, True
        return result, changed

    async def _retrying(self, once: Callable[[Attempt], Awaitable[_T]], what: str) -> _T:
        def resolved() -> None:
            self.write_transactions += 1

        return await with_retry(
            self._pool,
            once,
            pool_timeout=self._pool_module.PoolTimeout,
            on_resolved=resolved,
            what=what,
        )

    async def close(self) -> None:
        """Close the pool's connections. Safe to call twice; later calls raise RuntimeError."""
        if self._closed:
            return
        self._closed = True
        async with self._open_lock:
            if self._opened:
                await self._pool.close()
