"""PostgresStore's turn calls: the snapshot read and the ``write_turn`` transaction.

:func:`read_snapshot` sends its four reads pipelined inside one ``REPEATABLE READ`` read-only
transaction: one consistent view, about one round trip. :func:`write_turn` is the body of one
``BEGIN … COMMIT`` (run by ``PostgresDatabase._write`` pipelined: statements go out without
waiting for the previous one's result until one is read) and returns
``(result, wrote_anything)``. It starts, as every append does, with the session row's lock
(creating the row first when asked), so it sees everything committed before it: the status it
compares, and the queue entries it delivers.
"""

from __future__ import annotations

import time

from helix_stream.store._postgres_db import SESSION_COLUMNS, Row, Tx, session_record
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
from helix_stream.store._turns import Snapshot, TurnWrite, TurnWriteResult, check_turn_write

__all__ = ["read_snapshot", "write_turn"]

_SQL_SESSION = f"SELECT {SESSION_COLUMNS} FROM {{s}}.sessions WHERE id = %s"
_SQL_LOG = "SELECT seq, role, payload, created_at FROM {s}.log WHERE session_id = %s ORDER BY seq"
_SQL_LAST_CHECKPOINT = (
    "SELECT id, step_number, log_seq, state, created_at FROM {s}.checkpoints"
    " WHERE session_id = %s ORDER BY ord DESC LIMIT 1"
)
_SQL_PENDING = (
    "SELECT id, items, source, key, origin, created_at, delivered_seq FROM {s}.context_queue"
    " WHERE session_id = %s AND delivered_seq IS NULL ORDER BY id"
)
_SQL_LOCK = (
    f"SELECT last_seq, {SESSION_COLUMNS} FROM {{s}}.sessions WHERE id = %s FOR NO KEY UPDATE"
)
_SQL_CREATE = (
    "INSERT INTO {s}.sessions (id, agent_name, status, parent_id, created_at, updated_at, meta)"
    " VALUES (%s, %s, 'idle', %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING 1"
)
_SQL_TAKE_PENDING = (
    "SELECT id, items, source, key, origin FROM {s}.context_queue"
    " WHERE session_id = %s AND delivered_seq IS NULL ORDER BY id"
)


async def read_snapshot(tx: Tx, session_id: str) -> Snapshot:
    """The session, its log, its last checkpoint and its queue, as of one moment."""
    await tx.send("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    session = await tx.send(_SQL_SESSION, (session_id,))
    log = await tx.send(_SQL_LOG, (session_id,))
    checkpoint = await tx.send(_SQL_LAST_CHECKPOINT, (session_id,))
    pending = await tx.send(_SQL_PENDING, (session_id,))
    row = await session.fetchone()
    if row is None:
        return Snapshot(session=None)
    checkpoints = checkpoints_from_rows(session_id, await checkpoint.fetchall())
    return Snapshot(
        session=session_record(row),
        log=[
            LogRecord(seq=seq, role=role, payload=decode(payload), created_at=at)
            for seq, role, payload, at in await log.fetchall()
        ],
        checkpoint=checkpoints[0] if checkpoints else None,
        pending=queue_entries_from_rows(await pending.fetchall()),
    )


async def _lock(
    tx: Tx, session_id: str, write: TurnWrite, now: float
) -> tuple[Row, bool, list[Row]]:
    """The locked session row (``last_seq`` first), whether this write created it, and the
    undelivered queue entries (when the write delivers them).

    The statements go out together (the store runs this transaction pipelined); the server
    still runs them in order, so the queue is read once the lock is granted.
    """
    created = None
    if write.create is not None:
        create = write.create
        created = await tx.send(
            _SQL_CREATE,
            (session_id, create.agent_name, create.parent_id, now, now, encode(create.meta)),
        )
    locked = await tx.send(_SQL_LOCK, (session_id,))
    pending = await tx.send(_SQL_TAKE_PENDING, (session_id,)) if write.deliver_queue else None
    made = created is not None and await created.fetchone() is not None
    row = await locked.fetchone()
    if row is None:
        raise session_not_found(session_id)
    return row, made, await pending.fetchall() if pending is not None else []


def _queue_rows(
    entries: list[Row], seq: int, rows: list[tuple[str, JSON]]
) -> list[tuple[int, int]]:
    """Add the queue entries' items to ``rows``; return (queue id, seq of its first row)."""
    delivered: list[tuple[int, int]] = []
    for qid, items, source, key, origin in entries:
        delivered.append((qid, seq + len(rows) + 1))
        origin_dict = decode(origin)
        rows.extend(
            ("context", context_row(item, source=source, origin=origin_dict, queue_id=qid, key=key))
            for item in decode(items)
        )
    return delivered


async def write_turn(tx: Tx, session_id: str, write: TurnWrite) -> tuple[TurnWriteResult, bool]:
    """One turn boundary (see ``Store.write_turn``); run it pipelined."""
    roles, expected = check_turn_write(write)
    now = time.time()
    row, created, entries = await _lock(tx, session_id, write, now)
    seq, session = row[0], session_record(row[1:])
    if expected is not None and session.status not in expected:
        return TurnWriteResult(applied=False, session=session), False
    rows: list[tuple[str, JSON]] = list(roles)
    delivered = _queue_rows(entries, seq, rows)
    rows.extend(("context", r) for r in write.rows)
    records: list[LogRecord] = (
        await tx.append(session_id, seq, rows, now, delivered) if rows else []
    )
    if write.checkpoint is not None:
        await _checkpoint(tx, session_id, write, seq + len(records), now)
    status, meta = session.status, session.meta
    meta_changed = False
    if write.meta:
        meta, meta_changed = merge_meta(meta, write.meta)
    if write.status is not None:
        status = write.status
    changed = created or bool(records) or write.checkpoint is not None
    changed = changed or write.status is not None or meta_changed
    if changed:
        updated = await tx.one(
            "UPDATE {s}.sessions SET status = %s, meta = %s, updated_at = %s WHERE id = %s"
            f" RETURNING {SESSION_COLUMNS}",
            (status, encode(meta), now, session_id),
        )
        assert updated is not None  # the row is locked
        session = session_record(updated)
    return TurnWriteResult(applied=True, session=session, records=records), changed


async def _checkpoint(tx: Tx, session_id: str, write: TurnWrite, log_seq: int, now: float) -> None:
    checkpoint = write.checkpoint
    assert checkpoint is not None
    cp_id = checkpoint_id(checkpoint.id)
    inserted = await tx.one(
        "INSERT INTO {s}.checkpoints (session_id, id, step_number, log_seq, state, created_at)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (session_id, id) DO NOTHING RETURNING 1",
        (session_id, cp_id, checkpoint.step_number, log_seq, encode(checkpoint.state), now),
    )
    if inserted is None:
        raise duplicate_checkpoint(session_id, cp_id)
