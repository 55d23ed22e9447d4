"""The ledger of side-effect calls in a ``PostgresStore``'s schema (migration 5,
``Store.call_ledger``, table ``tool_calls``; the SQL and the rules are ``store/_ledger.py``'s)."""

from __future__ import annotations

from helix_stream._limits import check_session_id
from helix_stream.store._auth import postgres_sql
from helix_stream.store._ledger import (
    SQL_BEGIN,
    SQL_CALLS,
    SQL_MOVE,
    CallRow,
    CallState,
    begun,
    move_values,
)
from helix_stream.store._records import JSON
from helix_stream.store.postgres._db import PostgresDatabase, Tx

__all__ = ["PostgresCallLedger"]


class PostgresCallLedger:
    """The ``tool_calls`` table of a ``PostgresStore``'s schema, on its pool."""

    def __init__(self, store: PostgresDatabase) -> None:
        self._db = store

    async def begin(self, row: CallRow) -> None:
        values = begun(row).values()

        async def tx(tx: Tx) -> tuple[None, bool]:
            await tx.send(postgres_sql(SQL_BEGIN), values)
            return None, True

        await self._db._write(tx, "begin_tool_call")

    async def calls(self, session_id: str) -> list[CallRow]:
        check_session_id(session_id)

        async def read(tx: Tx) -> list[CallRow]:
            rows = await tx.all(postgres_sql(SQL_CALLS), (session_id,))
            return [CallRow.of(tuple(row)) for row in rows]

        return await self._db._read(read, "read_tool_calls")

    async def move(
        self,
        session_id: str,
        tool_call_id: str,
        *,
        expect: CallState,
        state: CallState,
        result: JSON | None = None,
    ) -> bool:
        values = move_values(session_id, tool_call_id, expect=expect, state=state, result=result)

        async def tx(tx: Tx) -> tuple[bool, bool]:
            moved = await tx.execute(postgres_sql(SQL_MOVE), values) > 0
            return moved, moved

        return await self._db._write(tx, "move_tool_call")
