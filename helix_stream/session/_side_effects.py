"""The session's side of the ledger of ``side_effects=True`` calls (``store/_ledger.py`` keeps
the rows).

* While a turn runs, :class:`SessionCalls` records each such call in the store's ledger before
  it runs and its result after (``loop/_side_effects.py`` calls it around the execution).
* When a turn opens (:func:`unsettled_calls`), a call whose record is still ``running`` and
  that the log does not answer was in flight when its run died or was cut short: nobody knows
  whether its side effect happened. It is **never run again by itself**. The turn stores the
  call with an ``outcome_unknown`` result (:func:`outcome_unknown_records`) in its first
  commit, so the model reads it at once and the turn goes on; then the row moves to
  ``unknown`` (:func:`mark_unknown`), and the turn's ``session.waiting`` event
  (``wait: "outcome"``) and a ``data-outcome-unknown`` UI part tell the app.
* ``Executor.resolve_call`` (``_resolve.py``) settles such a call once: with the real
  output or error, or by running it once more (same ``ctx.idempotency_key``); the outcome
  reaches the model as a ``late-answer`` notice row at its next model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence, Set
from dataclasses import replace
from typing import Any

from ..chunks import Chunk, DataChunk, ToolOutputError
from ..errors import FrameworkNotSupportedError
from ..loop._tools import tool_message
from ..steps import ToolCall, ToolResult
from ..store import CallLedger, CallRow, LogRecord, Store
from ..tools import Tool, dump_output
from ._pending import ResumePlan
from ._records import AssistantRecord, ToolRecord

__all__ = [
    "OUTCOME_PART",
    "SessionCalls",
    "capped",
    "mark_unknown",
    "outcome_unknown_records",
    "outcome_unknown_result",
    "result_json",
    "session_calls",
    "settle_unknown",
    "unsettled_calls",
    "waiting_data",
]

OUTCOME_PART = "outcome-unknown"  # the UI's data-outcome-unknown part
_TEXT_CAP = 16_000  # bytes of an output kept in a row or a notice (a row is at most 32 KiB)

OUTCOME_UNKNOWN = json.dumps(
    {
        "status": "outcome_unknown",
        "message": (
            "This call may or may not have happened: the process running it stopped before "
            "its result was recorded, and it was not run again. Do not assume either outcome; "
            "tell the user, or check with another tool. If the outcome becomes known, it "
            "will arrive as a notice."
        ),
    }
)


def capped(text: str) -> str:
    if len(text.encode()) <= _TEXT_CAP:
        return text
    return text.encode()[:_TEXT_CAP].decode(errors="ignore") + " …(truncated)"


def result_json(result: ToolResult) -> dict[str, Any]:
    """A result as the ledger keeps it (text, capped: the log has the whole output)."""
    if result.status == "output":
        return {"status": "output", "text": capped(dump_output(result.output))}
    return {"status": result.status, "error": capped(result.error or result.reason or "")}


class SessionCalls:
    """Records a turn's side-effect calls in its store's ledger (``CallContexts.ledger``)."""

    def __init__(self, ledger: CallLedger, session_id: str) -> None:
        self._ledger = ledger
        self._session_id = session_id

    async def started(self, call: ToolCall, tool: Tool, key: str) -> None:
        arguments = call.arguments if call.arguments is not None else json.dumps(call.input)
        row = CallRow(
            session_id=self._session_id,
            tool_call_id=call.id,
            tool_name=tool.name,
            arguments=arguments,
            idempotency_key=key,
        )
        await self._ledger.begin(row)

    async def ended(self, call: ToolCall, result: ToolResult) -> None:
        await self._ledger.move(
            self._session_id, call.id, expect="running", state="done", result=result_json(result)
        )


def _has_side_effects(tools: Mapping[str, Tool]) -> bool:
    return any(tool.side_effects for tool in tools.values())


def session_calls(store: Store, session_id: str, tools: Mapping[str, Tool]) -> SessionCalls | None:
    """The recorder of a turn whose agent has side-effect tools (``None``: it has none)."""
    ledger = store.call_ledger
    if ledger is None or not _has_side_effects(tools):
        return None
    return SessionCalls(ledger, session_id)


async def unsettled_calls(
    store: Store, session_id: str, log: Sequence[LogRecord], tools: Mapping[str, Tool]
) -> list[CallRow]:
    """The calls a dead (or cut short) run left in flight: recorded ``running`` (or marked
    ``unknown`` by a turn that died before storing their result), with no result in the log.
    Read only for an agent with side-effect tools (a plain turn's store calls stay
    what they were).

    Raises:
        FrameworkNotSupportedError: the agent has a side-effect tool and the store keeps no
            ledger (nothing written).
    """
    if not _has_side_effects(tools):
        return []
    ledger = store.call_ledger
    if ledger is None:
        raise FrameworkNotSupportedError(
            "this store keeps no ledger of side-effect calls (its call_ledger is None): a "
            "tool with side_effects=True needs one; use MemoryStore, SQLiteStore or "
            "PostgresStore, or delegate call_ledger in a wrapping store"
        )
    answered = {record.payload.get("tool_call_id") for record in log if record.role == "tool"}
    rows = await ledger.calls(session_id)
    # "unknown" without its result in the log: a turn that marked it died before storing it.
    return [
        row
        for row in rows
        if row.state in ("running", "unknown") and row.tool_call_id not in answered
    ]


def _part(row: CallRow) -> DataChunk:
    data = {
        "toolCallId": row.tool_call_id,
        "toolName": row.tool_name,
        "idempotencyKey": row.idempotency_key,
        "state": "unknown",
    }
    return DataChunk(name=OUTCOME_PART, data=data, id=f"outcome-{row.tool_call_id}")


def outcome_unknown_result(call_id: str) -> tuple[dict[str, Any], Chunk]:
    """The stored tool message and the chunk of a waiting call (an approved one, say) whose
    run a dead turn left in flight: settled ``outcome_unknown`` instead of run again."""
    record = ToolRecord(message=tool_message(call_id, OUTCOME_UNKNOWN), status="error")
    return record.encode(), ToolOutputError(tool_call_id=call_id, error_text=OUTCOME_UNKNOWN)


def outcome_unknown_records(
    rows: Sequence[CallRow], message_id: str
) -> tuple[list[dict[str, Any]], list[DataChunk]]:
    """The stored messages that give the model ``outcome_unknown`` for ``rows``: the calls as
    the dead step made them, each with its result; and their ``data-outcome-unknown`` parts."""
    if not rows:
        return [], []
    calls = [
        {
            "id": row.tool_call_id,
            "type": "function",
            "function": {"name": row.tool_name, "arguments": row.arguments},
        }
        for row in rows
    ]
    parts = [_part(row) for row in rows]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    assistant = AssistantRecord(message=message, message_id=message_id, data=parts)
    records = [assistant.encode()]
    records += [outcome_unknown_result(row.tool_call_id)[0] for row in rows]
    return records, parts


async def mark_unknown(store: Store, session_id: str, rows: Sequence[CallRow]) -> None:
    """Move ``rows`` to ``unknown`` once the model's ``outcome_unknown`` results are stored:
    the ledger keeps them open for :func:`resolve_call`."""
    ledger = store.call_ledger
    assert ledger is not None  # unsettled_calls found them in it
    for row in rows:
        await ledger.move(session_id, row.tool_call_id, expect="running", state="unknown")


def waiting_data(rows: Sequence[CallRow]) -> dict[str, Any]:
    """``session.waiting``'s data for calls whose outcome is unknown."""
    return {
        "pending": [row.tool_call_id for row in rows],
        "wait": "outcome",
        "calls": [
            {
                "tool_call_id": row.tool_call_id,
                "tool_name": row.tool_name,
                "idempotency_key": row.idempotency_key,
            }
            for row in rows
        ],
    }


def settle_unknown(plan: ResumePlan, unknown: Set[str]) -> ResumePlan:
    """``plan`` with each waiting call in ``unknown`` settled ``outcome_unknown``: a call a
    dead turn was running (approved, or signed in) is not run again by the resume step."""
    if not unknown:
        return plan
    calls = tuple(
        replace(call, settled=outcome_unknown_result(call.call.id), signed_in=False)
        if call.call.id in unknown
        else call
        for call in plan.resume.calls
    )
    return replace(plan, resume=replace(plan.resume, calls=calls))
