"""SQLiteStore's turn calls: the snapshot read and the ``write_turn`` transaction.

``read_snapshot`` is one read; ``write_turn`` is the body of one
``BEGIN IMMEDIATE … COMMIT`` (run by ``SQLiteDatabase._write``) and returns
``(result, wrote_anything)``. Committing the context queue as rows is here too, for
``commit_context`` is a ``write_turn`` that only delivers the queue.
"""

from __future__ import annotations

import sqlite3
import time

from helix_stream.store._protocol import JSON, LogRecord
from helix_stream.store._shared import (
    checkpoint_id,
    checkpoints_from_rows,
    context_row,
    decode,
    duplicate_checkpoint,
    encode,
    merge_meta,
    queue_entries_from_rows,
    session_not_found,
)
from helix_stream.store._sqlite_db import (
    SQL_PENDING,
    SQL_READ_LOG,
    SQL_SESSION,
    last_seq,
    read_session,
    session_record,
)
from helix_stream.store._turns import Snapshot, TurnWrite, TurnWriteResult, check_turn_write

__all__ = ["append_log", "read_snapshot", "write_turn"]

_SQL_INSERT_LOG = "INSERT INTO log (session_id, seq, role, payload, created_at) VALUES (?,?,?,?,?)"
_SQL_LAST_CHECKPOINT = (
    "SELECT id, step_number, log_seq, state, created_at FROM checkpoints"
    " WHERE session_id = ? ORDER BY ord DESC LIMIT 1"
)


def read_snapshot(conn: sqlite3.Connection, session_id: str) -> Snapshot:
    """The session, its log, its last checkpoint and its queue (one read transaction)."""
    conn.execute("BEGIN")  # one consistent view across the four reads
    try:
        row = conn.execute(SQL_SESSION, (session_id,)).fetchone()
        if row is None:
            return Snapshot(session=None)
        log = [
            LogRecord(seq=seq, role=role, payload=decode(payload), created_at=at)
            for seq, role, payload, at in conn.execute(SQL_READ_LOG, (session_id, 0))
        ]
        checkpoints = checkpoints_from_rows(
            session_id, conn.execute(_SQL_LAST_CHECKPOINT, (session_id,))
        )
        pending = queue_entries_from_rows(conn.execute(SQL_PENDING, (session_id,)))
        return Snapshot(
            session=session_record(row),
            log=log,
            checkpoint=checkpoints[0] if checkpoints else None,
            pending=pending,
        )
    finally:
        conn.execute("COMMIT")


def append_log(
    conn: sqlite3.Connection, session_id: str, seq: int, role: str, payload: JSON, now: float
) -> LogRecord:
    """Insert one log record (inside the caller's transaction) and return it as stored."""
    text = encode(payload)  # inside the transaction: a bad payload rolls back the rest
    conn.execute(_SQL_INSERT_LOG, (session_id, seq, role, text, now))
    return LogRecord(seq=seq, role=role, payload=decode(text), created_at=now)


def _deliver_queue(
    conn: sqlite3.Connection, session_id: str, seq: int, now: float
) -> list[LogRecord]:
    """Append every undelivered queue entry as rows after ``seq``; mark them delivered."""
    records: list[LogRecord] = []
    delivered: list[tuple[int, int]] = []
    for qid, items, source, key, origin, _, _ in conn.execute(
        SQL_PENDING, (session_id,)
    ).fetchall():
        delivered.append((seq + len(records) + 1, qid))
        origin_dict = decode(origin)
        for item in decode(items):
            row = context_row(item, source=source, origin=origin_dict, queue_id=qid, key=key)
            next_seq = seq + len(records) + 1
            records.append(append_log(conn, session_id, next_seq, "context", row, now))
    conn.executemany("UPDATE context_queue SET delivered_seq = ? WHERE id = ?", delivered)
    return records


def _claim(conn: sqlite3.Connection, session_id: str, write: TurnWrite, now: float) -> bool | None:
    """Create the session if asked; ``None`` when ``expect`` fails, else whether it was made."""
    row = conn.execute("SELECT status FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        if write.create is None:
            raise session_not_found(session_id)
        create = write.create
        conn.execute(
            "INSERT INTO sessions VALUES (?,?,?,?,?,?,?)",
            (session_id, create.agent_name, "idle", create.parent_id, now, now,
             encode(create.meta)),
        )  # fmt: skip
        return True
    if write.expect is not None and row[0] not in write.expect:
        return None
    return False


def write_turn(
    conn: sqlite3.Connection, session_id: str, write: TurnWrite
) -> tuple[TurnWriteResult, bool]:
    """One turn boundary (see ``Store.write_turn``)."""
    roles, _ = check_turn_write(write)
    now = time.time()
    created = _claim(conn, session_id, write, now)
    if created is None:
        return TurnWriteResult(applied=False, session=read_session(conn, session_id)), False
    changed = bool(created)
    seq = last_seq(conn, session_id)
    records = [
        append_log(conn, session_id, seq + i, role, message, now)
        for i, (role, message) in enumerate(roles, start=1)
    ]
    if write.deliver_queue:
        records += _deliver_queue(conn, session_id, seq + len(records), now)
    for row in write.rows:
        records.append(append_log(conn, session_id, seq + len(records) + 1, "context", row, now))
    if write.checkpoint is not None:
        _checkpoint(conn, session_id, write, seq + len(records), now)
    sets: dict[str, object] = {}
    if write.status is not None:
        sets["status"] = write.status
    if write.meta:
        merged, meta_changed = merge_meta(read_session(conn, session_id).meta, write.meta)
        if meta_changed:
            sets["meta"] = encode(merged)
    changed = changed or bool(records) or bool(sets) or write.checkpoint is not None
    if changed:
        sets["updated_at"] = now
        assignments = ", ".join(f"{column} = ?" for column in sets)
        conn.execute(
            f"UPDATE sessions SET {assignments} WHERE id = ?", (*sets.values(), session_id)
        )
    return TurnWriteResult(
        applied=True, session=read_session(conn, session_id), records=records
    ), changed


def _checkpoint(
    conn: sqlite3.Connection, session_id: str, write: TurnWrite, log_seq: int, now: float
) -> None:
    checkpoint = write.checkpoint
    assert checkpoint is not None
    cp_id = checkpoint_id(checkpoint.id)
    if conn.execute(
        "SELECT 1 FROM checkpoints WHERE session_id = ? AND id = ?", (session_id, cp_id)
    ).fetchone():
        raise duplicate_checkpoint(session_id, cp_id)
    conn.execute(
        "INSERT INTO checkpoints (session_id, id, step_number, log_seq, state, created_at)"
        " VALUES (?,?,?,?,?,?)",
        (session_id, cp_id, checkpoint.step_number, log_seq, encode(checkpoint.state), now),
    )
