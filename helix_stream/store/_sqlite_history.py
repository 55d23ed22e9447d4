"""SQLiteStore's history edits: the ``rewind`` and ``branch`` transactions.

Each function is the body of one ``BEGIN IMMEDIATE … COMMIT`` (run by ``SQLiteDatabase._write``)
and returns ``(result, wrote_anything)``. What to redeliver or drop, and which cuts to refuse,
is decided by the rules in ``_shared`` that MemoryStore applies too.
"""

from __future__ import annotations

import sqlite3
import time

from helix_stream.store._protocol import RewindResult, SessionRecord
from helix_stream.store._shared import (
    check_cut,
    check_seq,
    decode,
    encode,
    plan_rewind,
    session_exists,
    tool_call_ids,
)
from helix_stream.store._sqlite_db import last_seq, read_session, require_session

__all__ = ["branch", "rewind"]

_SQL_ROWS_AT = "SELECT seq, role, payload FROM log WHERE session_id = ? AND seq IN (?, ?)"
_SQL_CALLS = "SELECT payload FROM log WHERE session_id = ? AND seq <= ? AND role = 'assistant'"
# Only the entries a rewind can touch: still queued, or delivered into the cut-off part.
_SQL_REWIND_QUEUE = (
    "SELECT id, key, origin, delivered_seq FROM context_queue WHERE session_id = ?"
    " AND (delivered_seq IS NULL OR delivered_seq > ?) ORDER BY id"
)
_SQL_COPY_LOG = (
    "INSERT INTO log (session_id, seq, role, payload, created_at)"
    " SELECT ?, seq, role, payload, created_at FROM log WHERE session_id = ? AND seq <= ?"
)
# ORDER BY ord: the copies get new ``ord`` values in the same order, so they list oldest first.
_SQL_COPY_CHECKPOINTS = (
    "INSERT INTO checkpoints (session_id, id, step_number, log_seq, state, created_at)"
    " SELECT ?, id, step_number, log_seq, state, created_at FROM checkpoints"
    " WHERE session_id = ? AND log_seq <= ? ORDER BY ord"
)


def rewind(conn: sqlite3.Connection, session_id: str, to_seq: int) -> tuple[RewindResult, bool]:
    """Truncate the log after ``to_seq``; fix checkpoints and queue (see ``Store.rewind``)."""
    require_session(conn, session_id)
    last = last_seq(conn, session_id)
    check_seq(session_id, "to_seq", to_seq, last)
    if to_seq == last:
        return RewindResult(removed_records=0, redelivered_entries=[], dropped_entries=[]), False
    at = {
        seq: (role, text)
        for seq, role, text in conn.execute(_SQL_ROWS_AT, (session_id, to_seq, to_seq + 1))
    }
    check_cut(session_id, to_seq, at.get(to_seq), at.get(to_seq + 1))

    def surviving_calls() -> set[str]:
        rows = conn.execute(_SQL_CALLS, (session_id, to_seq))
        return tool_call_ids(decode(text) for (text,) in rows)

    entries = conn.execute(_SQL_REWIND_QUEUE, (session_id, to_seq)).fetchall()
    redelivered, dropped = plan_rewind(
        ((qid, decode(origin), delivered) for qid, _, origin, delivered in entries),
        to_seq,
        surviving_calls,
    )
    removed = conn.execute(
        "DELETE FROM log WHERE session_id = ? AND seq > ?", (session_id, to_seq)
    ).rowcount
    conn.execute(
        "DELETE FROM checkpoints WHERE session_id = ? AND log_seq > ?", (session_id, to_seq)
    )
    conn.executemany(
        "UPDATE context_queue SET delivered_seq = NULL WHERE id = ?",
        [(qid,) for qid in redelivered],
    )
    keys = {qid: key for qid, key, _, _ in entries}
    conn.executemany(
        "DELETE FROM context_keys WHERE session_id = ? AND key = ?",
        [(session_id, keys[qid]) for qid in dropped if keys[qid] is not None],
    )
    conn.executemany("DELETE FROM context_queue WHERE id = ?", [(qid,) for qid in dropped])
    conn.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id))
    result = RewindResult(
        removed_records=removed, redelivered_entries=redelivered, dropped_entries=dropped
    )
    return result, True


def branch(
    conn: sqlite3.Connection, source_id: str, new_id: str, upto_seq: int, agent_name: str | None
) -> tuple[SessionRecord, bool]:
    """Make ``new_id`` from ``source_id`` up to ``upto_seq`` (see ``Store.branch``)."""
    source = read_session(conn, source_id)
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (new_id,)).fetchone():
        raise session_exists(new_id)
    check_seq(source_id, "upto_seq", upto_seq, last_seq(conn, source_id))
    now = time.time()
    name = source.agent_name if agent_name is None else agent_name
    conn.execute(
        "INSERT INTO sessions VALUES (?,?,?,?,?,?,?)",
        (new_id, name, "idle", source_id, now, now, encode(source.meta)),
    )
    # Neither context_queue nor context_keys is copied: the source's queue stays the source's.
    conn.execute(_SQL_COPY_LOG, (new_id, source_id, upto_seq))
    conn.execute(_SQL_COPY_CHECKPOINTS, (new_id, source_id, upto_seq))
    return read_session(conn, new_id), True
