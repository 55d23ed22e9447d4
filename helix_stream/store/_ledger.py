"""The ledger of side-effect tool calls: what a store keeps of each call of a
``side_effects=True`` tool (``Store.call_ledger``), and its SQL, written once for both databases.

A turn writes a call's row **before** the tool runs (state ``running``) and its result after
(``done``). A row still ``running`` when the next turn of its session opens belongs to a run
that died (or was cut short) during the call: nobody knows whether the side effect happened.
That turn gives the model ``outcome_unknown`` and moves the row to ``unknown``, where it stays
open until ``Executor.resolve_call`` settles it (``settled``; ``rerunning`` while a re-run it
asked for runs). The session engine owns those rules (``session/_side_effects.py``); a ledger
only keeps rows and moves one from a state to another by compare-and-set, so that two
processes never settle one call twice.

* :class:`CallRow`: one call (its session, id, tool, arguments as the model sent them, the
  idempotency key, the state, the result or resolution, how many runs began);
* :class:`CallLedger`: ``begin`` (insert, or count one more run of the same call), ``calls``
  (a session's rows, oldest first), ``move`` (one state to another, with the result).

Every call is one transaction; writes count in the store's ``write_transactions``.
``MemoryStore`` keeps its rows in memory (:class:`MemoryCallLedger`); ``sqlite/_ledger.py``
and ``postgres/_ledger.py`` run the SQL below on the table ``tool_calls``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from helix_stream._limits import check_session_id
from helix_stream.store._records import JSON

__all__ = [
    "SQL_BEGIN",
    "SQL_CALLS",
    "SQL_MOVE",
    "CallLedger",
    "CallRow",
    "CallState",
    "MemoryCallLedger",
]

CallState = Literal["running", "done", "unknown", "rerunning", "settled"]

_COLUMNS = (
    "session_id, tool_call_id, tool_name, arguments, idempotency_key, state, result, runs, "
    "created_at, updated_at"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallRow:
    """One side-effect call as a ledger keeps it.

    Example::

        ledger = store.call_ledger                 # None: the store keeps no ledger
        if ledger is not None:
            for row in await ledger.calls("s1"):
                print(row.tool_call_id, row.state, row.runs)

    Attributes:
        session_id: The session the call ran in.
        tool_call_id: The call's id (the model's).
        tool_name: The tool.
        arguments: The call's arguments, the JSON text the model sent.
        idempotency_key: The call's ``ctx.idempotency_key``.
        state: ``running`` (written before the tool runs), ``done`` (its result written),
            ``unknown`` (found in flight by a later turn: the model got ``outcome_unknown``),
            ``rerunning`` (``resolve_call(rerun=True)`` runs it again), ``settled``.
        result: What it ended with (``{"status": "output", "output": ...}`` or
            ``{"status": "error", "error": ...}``), or how it was settled; ``None`` before.
        runs: How many runs of the call began.
        created_at: Unix time of the first run's record.
        updated_at: Unix time of the last change.
    """

    session_id: str
    tool_call_id: str
    tool_name: str
    arguments: str
    idempotency_key: str
    state: CallState = "running"
    result: JSON | None = None
    runs: int = 1
    created_at: float = 0.0
    updated_at: float = 0.0

    def values(self) -> tuple[Any, ...]:
        """The row's columns, in the table's order."""
        result = None if self.result is None else json.dumps(self.result, allow_nan=False)
        return (
            self.session_id,
            self.tool_call_id,
            self.tool_name,
            self.arguments,
            self.idempotency_key,
            self.state,
            result,
            self.runs,
            self.created_at,
            self.updated_at,
        )

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> CallRow:
        """The row read back from a table."""
        session_id, call_id, name, arguments, key, state, result, runs, created, updated = row
        return cls(
            session_id=str(session_id),
            tool_call_id=str(call_id),
            tool_name=str(name),
            arguments=str(arguments),
            idempotency_key=str(key),
            state=state,
            result=None if result is None else json.loads(result),
            runs=int(runs),
            created_at=float(created),
            updated_at=float(updated),
        )


class CallLedger(Protocol):
    """A store's ledger of side-effect calls (each call one transaction).

    Example::

        ledger = store.call_ledger
        if ledger is not None:
            row = CallRow(session_id="s1", tool_call_id="call_1", tool_name="charge",
                          arguments='{"cents": 500}', idempotency_key="hx-...")
            await ledger.begin(row)                # before the tool runs
            done = {"status": "output", "output": "charged"}
            await ledger.move("s1", "call_1", expect="running", state="done", result=done)
    """

    async def begin(self, row: CallRow) -> None:
        """Record that a run of ``row``'s call begins (state ``running``, no result): a new
        row, or, for a call the ledger has, one more run of it (``runs`` + 1).

        Raises:
            InvalidRequestError: the session id breaks the id rules (nothing written).
        """
        ...

    async def calls(self, session_id: str) -> list[CallRow]:
        """The session's calls, oldest first (none: an empty list).

        Raises:
            InvalidRequestError: the session id breaks the id rules.
        """
        ...

    async def move(
        self,
        session_id: str,
        tool_call_id: str,
        *,
        expect: CallState,
        state: CallState,
        result: JSON | None = None,
    ) -> bool:
        """Move the call from ``expect`` to ``state`` with ``result`` (a compare-and-set):
        ``False``, and nothing written, when the call is not in ``expect`` (or not there).

        Raises:
            InvalidRequestError: the session id breaks the id rules (nothing written).
            TypeError | ValueError: ``result`` is not strict JSON (nothing written).
        """
        ...


# A new call is inserted; the same call again (a call re-run after its sign-in, say) counts
# one more run and loses the result of the run before.
SQL_BEGIN = (
    f"INSERT INTO {{s}}tool_calls AS t ({_COLUMNS}) VALUES ({', '.join(['{p}'] * 10)}) "
    "ON CONFLICT (session_id, tool_call_id) DO UPDATE SET state = 'running', result = NULL, "
    "runs = t.runs + 1, updated_at = excluded.updated_at"
)
SQL_CALLS = (
    f"SELECT {_COLUMNS} FROM {{s}}tool_calls WHERE session_id = {{p}} "
    "ORDER BY created_at, tool_call_id"
)
SQL_MOVE = (
    "UPDATE {s}tool_calls SET state = {p}, result = {p}, updated_at = {p} "
    "WHERE session_id = {p} AND tool_call_id = {p} AND state = {p}"
)


def move_values(
    session_id: str,
    tool_call_id: str,
    *,
    expect: CallState,
    state: CallState,
    result: JSON | None,
) -> tuple[Any, ...]:
    """The parameters of :data:`SQL_MOVE` (the session id and the result checked first)."""
    check_session_id(session_id)
    text = None if result is None else json.dumps(result, allow_nan=False)
    return (state, text, time.time(), session_id, tool_call_id, expect)


def begun(row: CallRow) -> CallRow:
    """``row`` as :meth:`CallLedger.begin` writes a new one (now, running, one run)."""
    check_session_id(row.session_id)
    now = time.time()
    return replace(row, state="running", result=None, runs=1, created_at=now, updated_at=now)


class MemoryCallLedger:
    """The ledger of a ``MemoryStore`` (its writes count in the store's
    ``write_transactions``, as a SQL store's do)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._rows: dict[tuple[str, str], CallRow] = {}

    async def begin(self, row: CallRow) -> None:
        new = begun(row)
        key = (new.session_id, new.tool_call_id)
        old = self._rows.get(key)
        if old is not None:
            new = replace(
                old, state="running", result=None, runs=old.runs + 1, updated_at=new.updated_at
            )
        self._rows[key] = new
        self._store.write_transactions += 1

    async def calls(self, session_id: str) -> list[CallRow]:
        check_session_id(session_id)
        rows = [row for (sid, _), row in self._rows.items() if sid == session_id]
        return sorted(rows, key=lambda row: (row.created_at, row.tool_call_id))

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
        old = self._rows.get((session_id, tool_call_id))
        if old is None or old.state != expect:
            return False
        # Stored as the SQL stores store it: a JSON round trip (a copy the caller cannot touch).
        stored = None if values[1] is None else json.loads(values[1])
        self._rows[(session_id, tool_call_id)] = replace(
            old, state=state, result=stored, updated_at=values[2]
        )
        self._store.write_transactions += 1
        return True
