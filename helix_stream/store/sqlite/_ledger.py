"""The ledger of side-effect calls in a ``SQLiteStore``'s file (``Store.call_ledger``, table
``tool_calls``; the SQL and the rules are ``store/_ledger.py``'s)."""

from __future__ import annotations

import sqlite3

from helix_stream._limits import check_session_id
from helix_stream.store._auth import sqlite_sql
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
from helix_stream.store.sqlite._db import SQLiteDatabase

__all__ = ["SQLiteCallLedger"]


class SQLiteCallLedger:
    """The ``tool_calls`` table of a ``SQLiteStore``'s file (created with its schema)."""

    def __init__(self, store: SQLiteDatabase) -> None:
        self._db = store

    async def begin(self, row: CallRow) -> None:
        values = begun(row).values()

        def tx(conn: sqlite3.Connection) -> tuple[None, bool]:
            conn.execute(sqlite_sql(SQL_BEGIN), values)
            return None, True

        await self._db._write(tx)

    async def calls(self, session_id: str) -> list[CallRow]:
        check_session_id(session_id)
        sql = sqlite_sql(SQL_CALLS)
        rows = await self._db._run(lambda conn: conn.execute(sql, (session_id,)).fetchall())
        return [CallRow.of(tuple(row)) for row in rows]

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

        def tx(conn: sqlite3.Connection) -> tuple[bool, bool]:
            moved = conn.execute(sqlite_sql(SQL_MOVE), values).rowcount > 0
            return moved, moved

        return await self._db._write(tx)
