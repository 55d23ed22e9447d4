"""PostgresStore's plumbing: the lazy psycopg import, the pool, transactions, and the reads and
locks every method starts with.

psycopg is imported when a ``PostgresStore`` is made, never by ``import helix_stream``. The
pool (``psycopg_pool.AsyncConnectionPool``) opens on first use, after :func:`migrate` has run
on a connection of its own; its connections are in autocommit mode, so a read is its
statements alone and a write is an explicit ``BEGIN … COMMIT`` (:meth:`PostgresDatabase._write`).

Isolation is READ COMMITTED, with the session row as the lock: a method that appends to a
session's log (or rewinds it, or merges its meta) starts with ``SELECT … FOR NO KEY UPDATE`` on
that row, so writers of one session queue behind each other across processes, and each later
statement sees everything the previous holder committed. ``enqueue_context`` takes no lock: the
``context_keys`` primary key decides a request-key race, and an entry committed during a
context pass simply waits for the next one.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from helix_stream.errors import FrameworkNotSupportedError
from helix_stream.store._postgres_schema import migrate
from helix_stream.store._protocol import JSON, LogRecord, SessionRecord
from helix_stream.store._shared import decode, encode, session_not_found

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

__all__ = [
    "SESSION_COLUMNS",
    "PostgresDatabase",
    "Row",
    "Tx",
    "session_record",
]

_T = TypeVar("_T")
Row = tuple[Any, ...]
Params = Sequence[Any] | Mapping[str, Any]

SESSION_COLUMNS = "id, agent_name, status, parent_id, created_at, updated_at, meta"
# Plain names only: the schema is spliced into every statement and into string literals.
_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# One statement appends the rows, marks the queue entries they came from delivered, and
# advances the session's counter: one round trip for every write of a context pass. (The CTEs
# touch different tables, so sharing one snapshot is harmless; the caller holds the session
# lock.) The session and IS NULL conditions let the update find its entries through the small
# context_queue_pending index instead of scanning the whole queue. Arrays go as binary (%b):
# no per-element quoting of JSON text on the way out.
_SQL_APPEND = """WITH appended AS (
    INSERT INTO {s}.log (session_id, seq, role, payload, created_at)
    SELECT %(sid)s, t.seq, t.role, t.payload, %(now)s
    FROM unnest(%(seqs)b::bigint[], %(roles)b::text[], %(payloads)b::json[])
        AS t(seq, role, payload)
), delivered AS (
    UPDATE {s}.context_queue q SET delivered_seq = d.seq
    FROM unnest(%(queue_ids)b::bigint[], %(firsts)b::bigint[]) AS d(id, seq)
    WHERE q.id = d.id AND q.session_id = %(sid)s AND q.delivered_seq IS NULL
)
UPDATE {s}.sessions SET last_seq = %(last)s WHERE id = %(sid)s"""


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


def session_record(row: Row) -> SessionRecord:
    """The record of a row of ``SESSION_COLUMNS``."""
    sid, agent_name, status, parent_id, created_at, updated_at, meta = row[:7]
    return SessionRecord(
        id=sid,
        agent_name=agent_name,
        status=status,
        parent_id=parent_id,
        created_at=created_at,
        updated_at=updated_at,
        meta=decode(meta),
    )


@dataclass(frozen=True, slots=True)
class Tx:
    """A connection and the store's schema: runs statements written with ``{s}.table``."""

    conn: AsyncConnection[TupleRow]
    schema: str  # the quoted identifier

    async def send(self, sql: str, params: Params = ()) -> AsyncCursor[TupleRow]:
        """Send one statement; in pipeline mode, without waiting for its result."""
        return await self.conn.execute(sql.replace("{s}", self.schema), params)

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return its row count (use ``send`` in a pipelined transaction,
        where the count is not known yet)."""
        cur = await self.conn.execute(sql.replace("{s}", self.schema), params)
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

    async def append(
        self,
        session_id: str,
        start: int,
        rows: Sequence[tuple[str, JSON]],
        now: float,
        delivered: Sequence[tuple[int, int]] = (),
    ) -> list[LogRecord]:
        """Append ``rows`` (role, payload) at seqs ``start + 1 …``, mark the ``delivered``
        queue entries ``(id, seq of its first row)``, and advance ``sessions.last_seq``.

        The caller holds the session's lock, so ``start`` is the session's last seq.
        """
        texts = [encode(payload) for _, payload in rows]  # a bad payload fails before any write
        seqs = list(range(start + 1, start + len(rows) + 1))
        roles = [role for role, _ in rows]
        params = {
            "sid": session_id,
            "now": now,
            "seqs": seqs,
            "roles": roles,
            "payloads": texts,
            "queue_ids": [qid for qid, _ in delivered],
            "firsts": [first for _, first in delivered],
            "last": start + len(rows),
        }
        await self.send(_SQL_APPEND, params)
        return [
            LogRecord(seq=seq, role=role, payload=decode(text), created_at=now)
            for seq, role, text in zip(seqs, roles, texts, strict=True)
        ]

    async def lock_session(self, session_id: str, columns: str = "last_seq") -> Row:
        """Lock the session row until commit and return ``columns`` of its newest version.

        Only columns of the locked row itself are current here: under READ COMMITTED, a
        subquery in this statement would still read the snapshot taken before the wait.
        """
        row = await self.one(
            f"SELECT {columns} FROM {{s}}.sessions WHERE id = %s FOR NO KEY UPDATE",
            (session_id,),
        )
        if row is None:
            raise session_not_found(session_id)
        return row

    async def require_session(self, session_id: str) -> None:
        if await self.one("SELECT 1 FROM {s}.sessions WHERE id = %s", (session_id,)) is None:
            raise session_not_found(session_id)


class PostgresDatabase:
    """A schema in a PostgreSQL database reached through a pool; the base of PostgresStore.

    Attributes:
        schema: The schema the tables live in.
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
    ) -> None:
        if not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"schema must be a plain identifier (letters, digits, _; at most 63), "
                f"not {schema!r}"
            )
        self._psycopg, pool_module = load_psycopg()
        self.schema = schema
        self.write_transactions = 0
        self._dsn = dsn
        self._ident = self._psycopg.sql.Identifier(schema).as_string(None)
        self._pool: AsyncConnectionPool[AsyncConnection[TupleRow]] = (
            pool_module.AsyncConnectionPool(
                dsn,
                min_size=min_size,
                max_size=max_size,
                timeout=timeout,
                open=False,
                kwargs={"autocommit": True},
                configure=self._configure,
                name=f"helix-{schema}",
            )
        )
        self._open_lock = asyncio.Lock()
        self._opened = False
        self._closed = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(schema={self.schema!r})"

    async def _configure(self, conn: AsyncConnection[TupleRow]) -> None:
        # json columns come back as their text, decoded by the same ``decode`` as every store.
        conn.adapters.register_loader("json", self._psycopg.types.string.TextLoader)

    async def migrate(self) -> list[int]:
        """Apply the schema migrations not yet applied; return their versions (often ``[]``).

        Every store does this on first use; call it to migrate ahead of a deploy.

        Raises:
            FrameworkNotSupportedError: the schema is newer than this release.
        """
        self._check_open()
        conn = await self._psycopg.AsyncConnection.connect(self._dsn, autocommit=True)
        async with conn:
            return await migrate(conn, self._ident, self.schema)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"this PostgresStore (schema {self.schema!r}) is closed")

    async def _ensure_open(self) -> None:
        self._check_open()
        if self._opened:
            return
        async with self._open_lock:
            if not self._opened:
                await self.migrate()  # on a connection of its own: its errors say what failed
                await self._pool.open()
                self._opened = True

    async def _read(self, fn: Callable[[Tx], Awaitable[_T]]) -> _T:
        """Run ``fn`` outside a transaction (each statement sees what is committed)."""
        await self._ensure_open()
        async with self._pool.connection() as conn:
            return await fn(Tx(conn, self._ident))

    async def _write(
        self, fn: Callable[[Tx], Awaitable[tuple[_T, bool]]], *, pipeline: bool = False
    ) -> _T:
        """Run ``fn`` in one transaction; it returns ``(result, wrote_anything)``.

        Nothing to keep rolls back rather than commits, so the counter sees only real writes;
        an error rolls everything back. With ``pipeline``, statements go out without waiting
        for the previous one's result until ``fn`` reads one (``BEGIN`` and ``COMMIT``
        included), which saves round trips on the hot path.
        """
        await self._ensure_open()
        async with self._pool.connection() as conn, AsyncExitStack() as stack:
            if pipeline:
                await stack.enter_async_context(conn.pipeline())
            async with conn.transaction():
                result, changed = await fn(Tx(conn, self._ident))
                if not changed:
                    raise self._psycopg.Rollback()
        if changed:
            self.write_transactions += 1
        return result

    async def close(self) -> None:
        """Close the pool's connections. Safe to call twice; later calls raise RuntimeError."""
        if self._closed:
            return
        self._closed = True
        async with self._open_lock:
            if self._opened:
                await self._pool.close()
