"""SQLiteStore's writes: each applies a plan of ``_plan``, inside the caller's transaction.

The primitives are few — insert a session, insert log rows, mark queue entries delivered,
insert a checkpoint, update a session, insert a queue entry and its key — and nothing here
decides anything: the planner did. A failure rolls back the whole ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import sqlite3
import time

from helix_stream.store._plan import ContextRequest, TurnPlan
from helix_stream.store._plan_history import RewindPlan
from helix_stream.store._records import SessionRecord
from helix_stream.store._shared import SESSION_COLUMNS, encode

__all__ = [
    "SQL_COPY_CHECKPOINTS",
    "SQL_COPY_LOG",
    "apply_branch",
    "apply_enqueue",
    "apply_rewind",
    "apply_turn",
]

_SQL_INSERT_SESSION = f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"
# COALESCE: a plan that keeps the meta has none to write.
_SQL_UPDATE_SESSION = (
    "UPDATE sessions SET status = ?, meta = COALESCE(?, meta), updated_at = ?,"
    " lease_token = ?, lease_expires = ? WHERE id = ?"
)
_SQL_INSERT_LOG = "INSERT INTO log (session_id, seq, role, payload, created_at) VALUES (?,?,?,?,?)"
_SQL_DELIVER = "UPDATE context_queue SET delivered_seq = ? WHERE id = ?"
_SQL_INSERT_CHECKPOINT = (
    "INSERT INTO checkpoints (session_id, id, step_number, log_seq, state, created_at)"
    " VALUES (?,?,?,?,?,?)"
)
_SQL_INSERT_ENTRY = (
    "INSERT INTO context_queue (session_id, items, source, key, origin, created_at)"
    " VALUES (?,?,?,?,?,?)"
)
_SQL_INSERT_KEY = "INSERT INTO context_keys VALUES (?,?,?,?)"
SQL_COPY_LOG = (
    "INSERT INTO log (session_id, seq, role, payload, created_at)"
    " SELECT ?, seq, role, payload, created_at FROM log WHERE session_id = ? AND seq <= ?"
)
# ORDER BY ord: the copies get new ``ord`` values in the same order, so they list oldest first.
SQL_COPY_CHECKPOINTS = (
    "INSERT INTO checkpoints (session_id, id, step_number, log_seq, state, created_at)"
    " SELECT ?, id, step_number, log_seq, state, created_at FROM checkpoints"
    " WHERE session_id = ? AND log_seq <= ? ORDER BY ord"
)


def _insert_session(conn: sqlite3.Connection, record: SessionRecord, meta: str) -> None:
    conn.execute(
        _SQL_INSERT_SESSION,
        (record.id, record.agent_name, record.status, record.parent_id, record.created_at,
         record.updated_at, meta, record.lease_token, record.lease_expires),
    )  # fmt: skip


def apply_turn(conn: sqlite3.Connection, plan: TurnPlan) -> None:
    """Write what ``plan_turn_write`` decided (a plan that changes something)."""
    session_id, session = plan.session.id, plan.session
    if plan.create:
        assert plan.meta is not None  # a new session's meta is always planned
        _insert_session(conn, session, plan.meta)
    else:
        conn.execute(
            _SQL_UPDATE_SESSION,
            (session.status, plan.meta, session.updated_at, session.lease_token,
             session.lease_expires, session_id),
        )  # fmt: skip
    conn.executemany(
        _SQL_INSERT_LOG,
        [(session_id, row.seq, row.role, row.payload, plan.now) for row in plan.rows],
    )
    conn.executemany(_SQL_DELIVER, [(seq, qid) for qid, seq in plan.delivered])
    cp = plan.checkpoint
    if cp is not None:
        conn.execute(
            _SQL_INSERT_CHECKPOINT,
            (session_id, cp.id, cp.step_number, cp.log_seq, cp.state, plan.now),
        )


def apply_enqueue(conn: sqlite3.Connection, session_id: str, request: ContextRequest) -> None:
    """Insert the queue entry (and its key) that ``plan_enqueue`` let in."""
    queue_id = conn.execute(
        _SQL_INSERT_ENTRY,
        (session_id, request.items, request.source, request.key, request.origin, time.time()),
    ).lastrowid
    if request.key is not None:
        conn.execute(_SQL_INSERT_KEY, (session_id, request.key, request.digest, queue_id))


def apply_rewind(conn: sqlite3.Connection, session_id: str, plan: RewindPlan) -> None:
    """Cut the log and checkpoints after ``plan.to_seq`` and fix the queue as planned."""
    conn.execute("DELETE FROM log WHERE session_id = ? AND seq > ?", (session_id, plan.to_seq))
    conn.execute(
        "DELETE FROM checkpoints WHERE session_id = ? AND log_seq > ?", (session_id, plan.to_seq)
    )
    conn.executemany(
        "UPDATE context_queue SET delivered_seq = NULL WHERE id = ?",
        [(qid,) for qid in plan.redelivered],
    )
    conn.executemany(
        "DELETE FROM context_keys WHERE session_id = ? AND key = ?",
        [(session_id, key) for key in plan.dropped_keys],
    )
    conn.executemany("DELETE FROM context_queue WHERE id = ?", [(qid,) for qid in plan.dropped])
    conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (plan.now, session_id))


def apply_branch(
    conn: sqlite3.Connection, source_id: str, record: SessionRecord, upto_seq: int
) -> None:
    """Insert the branch's session and copy the source's log and checkpoints into it."""
    _insert_session(conn, record, encode(record.meta))
    # Neither context_queue nor context_keys is copied: the source's queue stays the source's.
    conn.execute(SQL_COPY_LOG, (record.id, source_id, upto_seq))
    conn.execute(SQL_COPY_CHECKPOINTS, (record.id, source_id, upto_seq))
