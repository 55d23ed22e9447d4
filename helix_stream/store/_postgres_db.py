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
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from helix_stream.errors import FrameworkNotSupportedError
from helix_stream.store._postgres_schema import migrate
from helix_stream.store._protocol import SessionRecord
from helix_stream.store._shared import decode, session_not_found

if TYPE_CHECKING:
    from psycopg import AsyncConnection
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

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; return its row count."""
        cur = await self.conn.execute(sql.replace("{s}", self.schema), params)
        return cur.rowcount

    async def all(self, sql: str, params: Params = ()) -> list[Row]:
        cur = await self.conn.execute(sql.replace("{s}", self.schema), params)
        return await cur.fetchall()

    async def one(self, sql: str, params: Params = ()) -> Row | None:
        cur = await self.conn.execute(sql.replace("{s}", self.schema), params)
        return await cur.fetchone()

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

    async def _write(self, fn: Callable[[Tx], Awaitable[tuple[_T, bool]]]) -> _T:
        """Run ``fn`` in one transaction; it returns ``(result, wrote_anything)``.

        Nothing to keep rolls back rather than commits, so the counter sees only real writes;
        an error rolls everything back.
        """
        await self._ensure_open()
        async with self._pool.connection() as conn, conn.transaction():
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
