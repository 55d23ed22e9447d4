"""The tables of tool authorization in a ``PostgresStore``'s schema (migration 4;
``Store.sign_in_table`` and ``Store.token_table``; the SQL is ``store/_auth.py``'s)."""

from __future__ import annotations

import time

from helix_stream._limits import check_session_id
from helix_stream.store._auth import (
    SQL_ADD,
    SQL_DELETE,
    SQL_DROP_EXPIRED,
    SQL_GET,
    SQL_SET,
    SQL_TAKE,
    postgres_sql,
)
from helix_stream.store._features import PendingRow
from helix_stream.store._shared import sign_in_pending
from helix_stream.store.postgres._db import PostgresDatabase, Tx

__all__ = ["PostgresAuthTables"]


class PostgresAuthTables:
    """The tables in a ``PostgresStore``'s schema (migration 4), on its pool."""

    def __init__(self, store: PostgresDatabase) -> None:
        self._db = store

    async def add_pending(self, row: PendingRow) -> None:
        check_session_id(row.session_id)

        async def tx(tx: Tx) -> tuple[None, bool]:
            await tx.send(postgres_sql(SQL_DROP_EXPIRED), (time.time(),))
            if await tx.execute(postgres_sql(SQL_ADD), row.values()) == 0:
                raise sign_in_pending(row.session_id)
            return None, True

        await self._db._write(tx, "add_pending_sign_in")

    async def take_pending(self, nonce: str) -> PendingRow | None:
        async def tx(tx: Tx) -> tuple[PendingRow | None, bool]:
            found = await tx.one(postgres_sql(SQL_TAKE), (nonce,))
            return (PendingRow.of(found), True) if found is not None else (None, False)

        return await self._db._write(tx, "take_pending_sign_in")

    async def get(self, key: str) -> bytes | None:
        async def read(tx: Tx) -> bytes | None:
            found = await tx.one(postgres_sql(SQL_GET), (key,))
            return None if found is None else bytes(found[0])

        return await self._db._read(read, "read_token_row")

    async def set(self, key: str, value: bytes) -> None:
        async def tx(tx: Tx) -> tuple[None, bool]:
            await tx.send(postgres_sql(SQL_SET), (key, bytes(value)))
            return None, True

        await self._db._write(tx, "write_token_row")

    async def delete(self, key: str) -> None:
        async def tx(tx: Tx) -> tuple[None, bool]:
            return None, await tx.execute(postgres_sql(SQL_DELETE), (key,)) > 0

        await self._db._write(tx, "delete_token_row")
