"""The tables of tool authorization in a ``SQLiteStore``'s file (``Store.sign_in_table`` and
``Store.token_table``; the SQL is ``store/_auth.py``'s)."""

from __future__ import annotations

import sqlite3
import time

from helix_stream._limits import check_session_id
from helix_stream.store._auth import (
    SQL_ADD,
    SQL_DELETE,
    SQL_DROP_EXPIRED,
    SQL_GET,
    SQL_SET,
    SQL_TAKE,
    sqlite_sql,
)
from helix_stream.store._features import PendingRow
from helix_stream.store._shared import sign_in_pending
from helix_stream.store.sqlite._db import SQLiteDatabase

__all__ = ["SQLiteAuthTables"]


class SQLiteAuthTables:
    """The tables in a ``SQLiteStore``'s file (created with its schema)."""

    def __init__(self, store: SQLiteDatabase) -> None:
        self._db = store

    async def add_pending(self, row: PendingRow) -> None:
        check_session_id(row.session_id)

        def tx(conn: sqlite3.Connection) -> tuple[None, bool]:
            conn.execute(sqlite_sql(SQL_DROP_EXPIRED), (time.time(),))
            if conn.execute(sqlite_sql(SQL_ADD), row.values()).rowcount == 0:
                raise sign_in_pending(row.session_id)
            return None, True

        await self._db._write(tx)

    async def take_pending(self, nonce: str) -> PendingRow | None:
        def tx(conn: sqlite3.Connection) -> tuple[PendingRow | None, bool]:
            found = conn.execute(sqlite_sql(SQL_TAKE), (nonce,)).fetchone()
            # Nothing taken: rolled back, nothing written.
            return (PendingRow.of(found), True) if found is not None else (None, False)

        return await self._db._write(tx)

    async def get(self, key: str) -> bytes | None:
        sql = sqlite_sql(SQL_GET)
        found = await self._db._run(lambda conn: conn.execute(sql, (key,)).fetchone())
        return None if found is None else bytes(found[0])

    async def set(self, key: str, value: bytes) -> None:
        def tx(conn: sqlite3.Connection) -> tuple[None, bool]:
            conn.execute(sqlite_sql(SQL_SET), (key, bytes(value)))
            return None, True

        await self._db._write(tx)

    async def delete(self, key: str) -> None:
        def tx(conn: sqlite3.Connection) -> tuple[None, bool]:
            return None, conn.execute(sqlite_sql(SQL_DELETE), (key,)).rowcount > 0

        await self._db._write(tx)
