"""The session store's two tables for tool authorization: pending sign-ins and token rows.

Beside a session store's own tables (in the same SQLite file, the same PostgreSQL schema, the
same process for a ``MemoryStore``), outside the ``Store`` protocol, like the UI stream log:

* ``auth_pending``: the sign-ins parked calls wait for, one row per state nonce (the session,
  the call, the strategy, whose token it will be, when it expires). Nothing secret: the PKCE
  verifier is derived from the app's secret and the nonce, never stored.
  :meth:`AuthTables.take_pending` reads and deletes a row in one statement (``DELETE ...
  RETURNING``), which is what makes a state usable once, even across processes.
* ``auth_tokens``: ``(key, value)`` rows for ``EncryptedTokenStore`` (the values are its
  ciphertext; this module never sees a token in the clear).

:func:`auth_tables` gives the tables of a store. A store of another kind gets in-memory
tables (logged once): its pending sign-ins do not survive the process.
"""

from __future__ import annotations

import logging
import sqlite3
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from helix_stream._limits import check_session_id

if TYPE_CHECKING:
    from helix_stream.store._protocol import Store
    from helix_stream.store.postgres._db import Tx
    from helix_stream.store.postgres._store import PostgresStore
    from helix_stream.store.sqlite._store import SQLiteStore

__all__ = ["AuthTables", "PendingRow", "auth_tables"]

logger = logging.getLogger("helix_stream.store")

_COLUMNS = "nonce, session_id, tool_call_id, strategy, owner, created_at, expires_at"


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingRow:
    """One pending sign-in as the store keeps it (see the module docstring)."""

    nonce: str
    session_id: str
    tool_call_id: str
    strategy: str
    owner: str
    created_at: float
    expires_at: float

    def values(self) -> tuple[Any, ...]:
        return (
            self.nonce,
            self.session_id,
            self.tool_call_id,
            self.strategy,
            self.owner,
            self.created_at,
            self.expires_at,
        )

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> PendingRow:
        nonce, session_id, call_id, strategy, owner, created, expires = row
        return cls(
            nonce=str(nonce),
            session_id=str(session_id),
            tool_call_id=str(call_id),
            strategy=str(strategy),
            owner=str(owner),
            created_at=float(created),
            expires_at=float(expires),
        )


class AuthTables(Protocol):
    """A store's pending sign-ins and token rows (each call one transaction)."""

    async def add_pending(self, row: PendingRow) -> None:
        """Keep ``row`` (and drop the rows that expired)."""
        ...

    async def take_pending(self, nonce: str) -> PendingRow | None:
        """Delete and return the row of ``nonce`` at once (``None``: there is none)."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The token row's value under ``key``."""
        ...

    async def set(self, key: str, value: bytes) -> None:
        """Write a token row (replacing the one there)."""
        ...

    async def delete(self, key: str) -> None:
        """Remove a token row (if present)."""
        ...


class MemoryAuthTables:
    """The tables in memory (a ``MemoryStore``'s, or a store of an unknown kind)."""

    def __init__(self) -> None:
        self.pending: dict[str, PendingRow] = {}
        self.tokens: dict[str, bytes] = {}

    async def add_pending(self, row: PendingRow) -> None:
        check_session_id(row.session_id)
        now = time.time()
        for nonce in [n for n, r in self.pending.items() if r.expires_at <= now]:
            del self.pending[nonce]
        self.pending[row.nonce] = row

    async def take_pending(self, nonce: str) -> PendingRow | None:
        return self.pending.pop(nonce, None)

    async def get(self, key: str) -> bytes | None:
        return self.tokens.get(key)

    async def set(self, key: str, value: bytes) -> None:
        self.tokens[key] = bytes(value)

    async def delete(self, key: str) -> None:
        self.tokens.pop(key, None)


_SQL_DROP_EXPIRED = "DELETE FROM {s}auth_pending WHERE expires_at <= {p}"
_SQL_ADD = f"INSERT INTO {{s}}auth_pending ({_COLUMNS}) VALUES ({', '.join(['{p}'] * 7)})"
_SQL_TAKE = f"DELETE FROM {{s}}auth_pending WHERE nonce = {{p}} RETURNING {_COLUMNS}"
_SQL_GET = "SELECT value FROM {s}auth_tokens WHERE key = {p}"
_SQL_SET = (
    "INSERT INTO {s}auth_tokens (key, value) VALUES ({p}, {p}) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_SQL_DELETE = "DELETE FROM {s}auth_tokens WHERE key = {p}"


def _sqlite(sql: str) -> str:
    return sql.replace("{s}", "").replace("{p}", "?")


def _pg(sql: str) -> str:
    # Tx.send splices the quoted schema in for "{s}".
    return sql.replace("{s}", "{s}.").replace("{p}", "%s")


class SQLiteAuthTables:
    """The tables in a ``SQLiteStore``'s file (created with its schema)."""

    def __init__(self, store: SQLiteStore) -> None:
        self._db = store

    async def add_pending(self, row: PendingRow) -> None:
        check_session_id(row.session_id)

        def tx(conn: sqlite3.Connection) -> tuple[None, bool]:
            conn.execute(_sqlite(_SQL_DROP_EXPIRED), (time.time(),))
            conn.execute(_sqlite(_SQL_ADD), row.values())
            return None, True

        await self._db._write(tx)

    async def take_pending(self, nonce: str) -> PendingRow | None:
        def tx(conn: sqlite3.Connection) -> tuple[PendingRow | None, bool]:
            found = conn.execute(_sqlite(_SQL_TAKE), (nonce,)).fetchone()
            # Nothing taken: rolled back, nothing written.
            return (PendingRow.of(found), True) if found is not None else (None, False)

        return await self._db._write(tx)

    async def get(self, key: str) -> bytes | None:
        found = await self._db._run(lambda conn: conn.execute(_sqlite(_SQL_GET), (key,)).fetchone())
        return None if found is None else bytes(found[0])

    async def set(self, key: str, value: bytes) -> None:
        def tx(conn: sqlite3.Connection) -> tuple[None, bool]:
            conn.execute(_sqlite(_SQL_SET), (key, bytes(value)))
            return None, True

        await self._db._write(tx)

    async def delete(self, key: str) -> None:
        def tx(conn: sqlite3.Connection) -> tuple[None, bool]:
            return None, conn.execute(_sqlite(_SQL_DELETE), (key,)).rowcount > 0

        await self._db._write(tx)


class PostgresAuthTables:
    """The tables in a ``PostgresStore``'s schema (migration 4), on its pool."""

    def __init__(self, store: PostgresStore) -> None:
        self._db = store

    async def add_pending(self, row: PendingRow) -> None:
        check_session_id(row.session_id)

        async def tx(tx: Tx) -> tuple[None, bool]:
            await tx.send(_pg(_SQL_DROP_EXPIRED), (time.time(),))
            await tx.send(_pg(_SQL_ADD), row.values())
            return None, True

        await self._db._write(tx, "add_pending_sign_in")

    async def take_pending(self, nonce: str) -> PendingRow | None:
        async def tx(tx: Tx) -> tuple[PendingRow | None, bool]:
            found = await tx.one(_pg(_SQL_TAKE), (nonce,))
            return (PendingRow.of(found), True) if found is not None else (None, False)

        return await self._db._write(tx, "take_pending_sign_in")

    async def get(self, key: str) -> bytes | None:
        async def read(tx: Tx) -> bytes | None:
            found = await tx.one(_pg(_SQL_GET), (key,))
            return None if found is None else bytes(found[0])

        return await self._db._read(read, "read_token_row")

    async def set(self, key: str, value: bytes) -> None:
        async def tx(tx: Tx) -> tuple[None, bool]:
            await tx.send(_pg(_SQL_SET), (key, bytes(value)))
            return None, True

        await self._db._write(tx, "write_token_row")

    async def delete(self, key: str) -> None:
        async def tx(tx: Tx) -> tuple[None, bool]:
            return None, await tx.execute(_pg(_SQL_DELETE), (key,)) > 0

        await self._db._write(tx, "delete_token_row")


# One set of tables per store object: a MemoryStore's live as long as it does.
_TABLES: weakref.WeakKeyDictionary[Any, AuthTables] = weakref.WeakKeyDictionary()


def auth_tables(store: Store) -> AuthTables:
    """The pending sign-ins and token rows of ``store`` (see the module docstring)."""
    found = _TABLES.get(store)
    if found is not None:
        return found
    from helix_stream.store._memory import MemoryStore
    from helix_stream.store.postgres._store import PostgresStore
    from helix_stream.store.sqlite._store import SQLiteStore

    tables: AuthTables
    if isinstance(store, SQLiteStore):
        tables = SQLiteAuthTables(store)
    elif isinstance(store, PostgresStore):
        tables = PostgresAuthTables(store)
    else:
        if not isinstance(store, MemoryStore):
            logger.warning(
                "core.auth.memory_tables: store %s has no tables for pending sign-ins and "
                "token rows; they are kept in memory and do not survive this process",
                type(store).__name__,
                extra={"event": "core.auth.memory_tables"},
            )
        tables = MemoryAuthTables()
    _TABLES[store] = tables
    return tables
