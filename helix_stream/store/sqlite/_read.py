"""SQLiteStore's reads: the protocol's reads, and the state each planner decides on.

Every function takes the connection of a call already running (``SQLiteDatabase._run``); the
``*_state`` ones run inside a write's ``BEGIN IMMEDIATE``, so what they read cannot change
before the plan is applied.
"""

from __future__ import annotations

import sqlite3

from helix_stream.store._plan import (
    CheckedWrite,
    ContextRequest,
    EnqueueState,
    TurnState,
)
from helix_stream.store._plan_history import (
    BranchState,
    RewindState,
    tool_call_ids,
)
from helix_stream.store._records import Checkpoint, LogRecord, SessionRecord
from helix_stream.store._shared import (
    SESSION_COLUMNS,
    checkpoints_from_rows,
    decode,
    log_from_rows,
    queue_entries_from_rows,
    session_from_row,
    session_not_found,
)
from helix_stream.store._turns import Snapshot

__all__ = [
    "SQL_CALLS",
    "SQL_LAST_SEQ",
    "SQL_PENDING",
    "SQL_READ_LOG",
    "SQL_REWIND_QUEUE",
    "branch_state",
    "checkpoints",
    "enqueue_state",
    "last_seq",
    "read_log",
    "require_session",
    "rewind_state",
    "session",
    "snapshot",
    "turn_state",
]

SQL_SESSION = f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"
SQL_READ_LOG = (
    "SELECT seq, role, payload, created_at FROM log WHERE session_id = ? AND seq > ? ORDER BY seq"
)
SQL_LAST_SEQ = "SELECT COALESCE(MAX(seq), 0) FROM log WHERE session_id = ?"
SQL_PENDING = (
    "SELECT id, items, source, key, origin, created_at, delivered_seq FROM context_queue"
    " WHERE session_id = ? AND delivered_seq IS NULL ORDER BY id"
)
_SQL_TAKE_PENDING = (
    "SELECT id, items, source, key, origin FROM context_queue"
    " WHERE session_id = ? AND delivered_seq IS NULL ORDER BY id"
)
_SQL_CHECKPOINTS = (
    "SELECT id, step_number, log_seq, state, created_at FROM checkpoints"
    " WHERE session_id = ? ORDER BY ord"
)
_SQL_LAST_CHECKPOINT = (
    "SELECT id, step_number, log_seq, state, created_at FROM checkpoints"
    " WHERE session_id = ? ORDER BY ord DESC LIMIT 1"
)
_SQL_CHECKPOINT_TAKEN = "SELECT 1 FROM checkpoints WHERE session_id = ? AND id = ?"
_SQL_KEY = "SELECT items_sha256 FROM context_keys WHERE session_id = ? AND key = ?"
_SQL_QUEUED_ITEMS = (
    "SELECT COALESCE(SUM(json_array_length(items)), 0) FROM context_queue"
    " WHERE session_id = ? AND delivered_seq IS NULL"
)
_SQL_ROWS_AT = "SELECT seq, role, payload FROM log WHERE session_id = ? AND seq IN (?, ?)"
SQL_CALLS = "SELECT payload FROM log WHERE session_id = ? AND seq <= ? AND role = 'assistant'"
# Only the entries a rewind can touch: still queued, or delivered into the cut-off part.
SQL_REWIND_QUEUE = (
    "SELECT id, key, origin, delivered_seq FROM context_queue WHERE session_id = ?"
    " AND (delivered_seq IS NULL OR delivered_seq > ?) ORDER BY id"
)


def session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    """The session's record, or ``None``."""
    row = conn.execute(SQL_SESSION, (session_id,)).fetchone()
    return None if row is None else session_from_row(row)


def require_session(conn: sqlite3.Connection, session_id: str) -> None:
    """SessionNotFoundError unless the session exists."""
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
        raise session_not_found(session_id)


def last_seq(conn: sqlite3.Connection, session_id: str) -> int:
    """The seq of the session's last log record; 0 for an empty log."""
    return int(conn.execute(SQL_LAST_SEQ, (session_id,)).fetchone()[0])


def read_log(conn: sqlite3.Connection, session_id: str, after_seq: int) -> list[LogRecord]:
    """The log records after ``after_seq``."""
    return log_from_rows(conn.execute(SQL_READ_LOG, (session_id, after_seq)))


def checkpoints(conn: sqlite3.Connection, session_id: str) -> list[Checkpoint]:
    """The session's checkpoints, oldest first."""
    return checkpoints_from_rows(session_id, conn.execute(_SQL_CHECKPOINTS, (session_id,)))


def snapshot(conn: sqlite3.Connection, session_id: str) -> Snapshot:
    """The session, its log, its last checkpoint and its queue (one read transaction)."""
    conn.execute("BEGIN")  # one consistent view across the four reads
    try:
        record = session(conn, session_id)
        if record is None:
            return Snapshot(session=None)
        last = checkpoints_from_rows(session_id, conn.execute(_SQL_LAST_CHECKPOINT, (session_id,)))
        return Snapshot(
            session=record,
            log=read_log(conn, session_id, 0),
            checkpoint=last[0] if last else None,
            pending=queue_entries_from_rows(conn.execute(SQL_PENDING, (session_id,))),
        )
    finally:
        conn.execute("COMMIT")


def turn_state(
    conn: sqlite3.Connection, session_id: str, write: CheckedWrite, now: float
) -> TurnState:
    """What ``plan_turn_write`` decides on."""
    record = session(conn, session_id)
    if record is None:
        return TurnState(session_id=session_id, session=None, now=now)
    pending = []
    if write.deliver_queue:
        pending = conn.execute(_SQL_TAKE_PENDING, (session_id,)).fetchall()
    taken = None
    cp = write.checkpoint
    if cp is not None and cp.given:  # a fresh uuid4 is never taken
        taken = conn.execute(_SQL_CHECKPOINT_TAKEN, (session_id, cp.id)).fetchone()
    return TurnState(
        session_id=session_id,
        session=record,
        last_seq=last_seq(conn, session_id),
        pending=pending,
        checkpoint_taken=taken is not None,
        now=now,
    )


def enqueue_state(
    conn: sqlite3.Connection, session_id: str, request: ContextRequest, cap: int
) -> EnqueueState:
    """What ``plan_enqueue`` decides on."""
    exists = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
    digest = None
    if exists and request.key is not None:
        row = conn.execute(_SQL_KEY, (session_id, request.key)).fetchone()
        digest = None if row is None else row[0]
    queued = conn.execute(_SQL_QUEUED_ITEMS, (session_id,)).fetchone()[0] if exists else 0
    return EnqueueState(
        session_id=session_id,
        exists=exists is not None,
        key_digest=digest,
        queued=int(queued),
        cap=cap,
    )


def rewind_state(conn: sqlite3.Connection, session_id: str, to_seq: int, now: float) -> RewindState:
    """What ``plan_rewind`` decides on."""
    require_session(conn, session_id)
    at = {
        seq: (role, text)
        for seq, role, text in conn.execute(_SQL_ROWS_AT, (session_id, to_seq, to_seq + 1))
    }

    def surviving_calls() -> set[str]:
        rows = conn.execute(SQL_CALLS, (session_id, to_seq))
        return tool_call_ids(decode(text) for (text,) in rows)

    return RewindState(
        session_id=session_id,
        last_seq=last_seq(conn, session_id),
        cut=(at.get(to_seq), at.get(to_seq + 1)),
        entries=[
            (qid, key, decode(origin), delivered)
            for qid, key, origin, delivered in conn.execute(SQL_REWIND_QUEUE, (session_id, to_seq))
        ],
        surviving_calls=surviving_calls,
        now=now,
    )


def branch_state(conn: sqlite3.Connection, source_id: str, new_id: str, now: float) -> BranchState:
    """What ``plan_branch`` decides on."""
    source = session(conn, source_id)
    taken = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (new_id,)).fetchone()
    return BranchState(
        source_id=source_id,
        source=source,
        source_last_seq=last_seq(conn, source_id) if source else 0,
        target_exists=taken is not None,
        now=now,
    )
