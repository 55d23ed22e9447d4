"""The tables of tool authorization in each store: pending sign-ins and token rows.

Each store hands its own out through the protocol (``Store.sign_in_table`` and
``Store.token_table``, both one object of this module; ``_features.py`` says what they
keep): :class:`MemoryAuthTables` in a ``MemoryStore`` (they live as long as it does),
:class:`SQLiteAuthTables` in a ``SQLiteStore``'s file, :class:`PostgresAuthTables` in a
``PostgresStore``'s schema (migration 4). The SQL is written once, for both databases.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING

from helix_stream._limits import check_session_id
from helix_stream.store._features import PendingRow
from helix_stream.store._shared import sign_in_pending

if TYPE_CHECKING:
    from helix_stream.store._memory import MemoryStore
    from helix_stream.store.postgres._db import Tx
    from helix_stream.store.postgres._store import PostgresStore
    from helix_stream.store.sqlite._store import SQLiteStore

__all__ = ["MemoryAuthTables", "PostgresAuthTables", "SQLiteAuthTables"]

_COLUMNS = "nonce, session_id, tool_call_id, strategy, owner, created_at, expires_at"


class MemoryAuthTables:
    """The tables in a ``MemoryStore`` (its writes count in the store's
    ``write_transactions``, as a SQL store's do)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._pending: dict[str, PendingRow] = {}
        self._tokens: dict[str, bytes] = {}

    def _wrote(self) -> None:
        self._store.write_transactions += 1

    async def add_pending(self, row: PendingRow) -> None:
        check_session_id(row.session_id)
        now = time.time()
        kept = {n: r for n, r in self._pending.items() if r.expires_at > now}
        if row.nonce in kept:
            raise sign_in_pending(row.session_id)
        self._pending = {**kept, row.nonce: row}
        self._wrote()

    async def take_pending(self, nonce: str) -> PendingRow | None:
        found = self._pending.pop(nonce, None)
        if found is not None:
            self._wrote()
        return found

    async def get(self, key: str) -> bytes | None:
        return self._tokens.get(key)

    async def set(self, key: str, value: bytes) -> None:
        self._tokens[key] = bytes(value)
        self._wrote()

    async def delete(self, key: str) -> None:
        if self._tokens.pop(key, None) is not None:
            self._wrote()


_SQL_DROP_EXPIRED = "DELETE FROM {s}auth_pending WHERE expires_at <= {p}"
# A nonce still pending is never replaced: the write is refused (and rolled back).
_SQL_ADD = (
    f"INSERT INTO {{s}}auth_pending ({_COLUMNS}) VALUES ({', '.join(['{p}'] * 7)}) "
    "ON CONFLICT (nonce) DO NOTHING"
)
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
            if conn.execute(_sqlite(_SQL_ADD), row.values()).rowcount == 0:
                raise sign_in_pending(row.session_id)
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
            if await tx.execute(_pg(_SQL_ADD), row.values()) == 0:
                raise sign_in_pending(row.session_id)
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
