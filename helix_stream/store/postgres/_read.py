"""PostgresStore's reads: the protocol's reads, and the state each planner decides on.

The ``*_state`` functions run inside a write's transaction and start with its lock: the session
row's (``FOR NO KEY UPDATE``) for a turn write or a rewind, the source's (``FOR SHARE``) for a
branch, the session's enqueue advisory lock for an enqueue. Under READ COMMITTED, every
statement after the lock sees what the lock's previous holder committed, so the state a planner
gets is the newest; the turn write's and the rewind's reads go out pipelined with the lock
(one round trip), and the server still runs them in order.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from typing import Any

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
from helix_stream.store._records import SessionRecord
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
from helix_stream.store.postgres._db import Tx

__all__ = [
    "SESSION_COLUMNS",
    "SQL_CALLS",
    "SQL_PENDING",
    "SQL_READ_LOG",
    "SQL_REWIND_QUEUE",
    "branch_state",
    "enqueue_state",
    "rewind_state",
    "session_read",
    "snapshot",
    "turn_state",
]

# The database's clock, in the statement that reads the session: every replica judges leases
# by it (and writes them by it: it is the planner's ``now``), whatever its own clock says.
# ``now()`` is the transaction's start, the same in each of its statements.
_NOW = "extract(epoch from now())::float8"
SQL_SESSION = f"SELECT {SESSION_COLUMNS}, {_NOW} FROM {{s}}.sessions WHERE id = %s"
# LEFT JOIN from the session's row: see ``Tx.all_of_session``.
SQL_READ_LOG = (
    "SELECT l.seq, l.role, l.payload, l.created_at FROM {s}.sessions s"
    " LEFT JOIN {s}.log l ON l.session_id = s.id AND l.seq > %s WHERE s.id = %s ORDER BY l.seq"
)
SQL_CHECKPOINTS = (
    "SELECT c.id, c.step_number, c.log_seq, c.state, c.created_at FROM {s}.sessions s"
    " LEFT JOIN {s}.checkpoints c ON c.session_id = s.id WHERE s.id = %s ORDER BY c.ord"
)
SQL_PENDING = (
    "SELECT id, items, source, key, origin, created_at, delivered_seq FROM {s}.context_queue"
    " WHERE session_id = %s AND delivered_seq IS NULL ORDER BY id"
)
_SQL_LOG = "SELECT seq, role, payload, created_at FROM {s}.log WHERE session_id = %s ORDER BY seq"
_SQL_LAST_CHECKPOINT = (
    "SELECT id, step_number, log_seq, state, created_at FROM {s}.checkpoints"
    " WHERE session_id = %s ORDER BY ord DESC LIMIT 1"
)
# The row this write creates when asked; a concurrent creator makes ON CONFLICT wait, then skip.
_SQL_CREATE = (
    "INSERT INTO {s}.sessions (id, agent_name, status, parent_id, created_at, updated_at, meta)"
    f" VALUES (%s, %s, 'idle', %s, {_NOW}, {_NOW}, %s) ON CONFLICT (id) DO NOTHING RETURNING 1"
)
# Only columns of the locked row itself are current here: under READ COMMITTED, a subquery in
# this statement would still read the snapshot taken before the wait.
_SQL_LOCK = (
    f"SELECT last_seq, {SESSION_COLUMNS}, {_NOW} FROM {{s}}.sessions WHERE id = %s"
    " FOR NO KEY UPDATE"
)
_SQL_TAKE_PENDING = (
    "SELECT id, items, source, key, origin FROM {s}.context_queue"
    " WHERE session_id = %s AND delivered_seq IS NULL ORDER BY id"
)
_SQL_CHECKPOINT_TAKEN = "SELECT 1 FROM {s}.checkpoints WHERE session_id = %s AND id = %s"
_SQL_ENQUEUE_LOCK = "SELECT pg_advisory_xact_lock(%s)"
# Whether the session exists, how many items its queue holds and what its key was first used
# with, in one round trip (after the advisory lock: see ``enqueue_state``).
_SQL_ENQUEUE_STATE = (
    "SELECT EXISTS (SELECT 1 FROM {s}.sessions WHERE id = %(sid)s),"
    " (SELECT COALESCE(SUM(json_array_length(items)), 0) FROM {s}.context_queue"
    "  WHERE session_id = %(sid)s AND delivered_seq IS NULL),"
    " (SELECT items_sha256 FROM {s}.context_keys WHERE session_id = %(sid)s AND key = %(key)s)"
)
SQL_KEY = "SELECT items_sha256 FROM {s}.context_keys WHERE session_id = %s AND key = %s"
_SQL_ROWS_AT = "SELECT seq, role, payload FROM {s}.log WHERE session_id = %s AND seq IN (%s, %s)"
SQL_CALLS = "SELECT payload FROM {s}.log WHERE session_id = %s AND seq <= %s AND role = 'assistant'"
# Only the entries a rewind can touch: still queued, or delivered into the cut-off part.
SQL_REWIND_QUEUE = (
    "SELECT id, key, origin, delivered_seq FROM {s}.context_queue WHERE session_id = %s"
    " AND (delivered_seq IS NULL OR delivered_seq > %s) ORDER BY id"
)
# FOR SHARE: no rewind or append of the source can change the copied prefix meanwhile, while
# other branches of the same source may proceed.
_SQL_BRANCH_SOURCE = (
    f"SELECT last_seq, {SESSION_COLUMNS}, {_NOW} FROM {{s}}.sessions WHERE id = %s FOR SHARE"
)
_SQL_EXISTS = "SELECT 1 FROM {s}.sessions WHERE id = %s"


def session_read(row: Sequence[Any]) -> SessionRecord:
    """The record of a row of :data:`SQL_SESSION` (its columns, then the database's clock)."""
    return session_from_row(row[:-1], read_at=float(row[-1]))


async def snapshot(tx: Tx, session_id: str) -> Snapshot:
    """The session, its log, its last checkpoint and its queue, as of one moment (inside a
    pipelined transaction: the four reads go out together)."""
    await tx.send("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    session = await tx.send(SQL_SESSION, (session_id,))
    log = await tx.send(_SQL_LOG, (session_id,))
    checkpoint = await tx.send(_SQL_LAST_CHECKPOINT, (session_id,))
    pending = await tx.send(SQL_PENDING, (session_id,))
    row = await session.fetchone()
    if row is None:
        return Snapshot(session=None)
    checkpoints = checkpoints_from_rows(session_id, await checkpoint.fetchall())
    return Snapshot(
        session=session_read(row),
        log=log_from_rows(await log.fetchall()),
        checkpoint=checkpoints[0] if checkpoints else None,
        pending=queue_entries_from_rows(await pending.fetchall()),
    )


async def turn_state(tx: Tx, session_id: str, write: CheckedWrite) -> TurnState:
    """Lock the session row (inserting it first when the write creates the session) and read
    what ``plan_turn_write`` decides on, the database's clock included; all in one round
    trip."""
    created = None
    if write.create is not None:
        create = write.create
        created = await tx.send(
            _SQL_CREATE, (session_id, create.agent_name, create.parent_id, write.create_meta)
        )
    locked = await tx.send(_SQL_LOCK, (session_id,))
    pending = await tx.send(_SQL_TAKE_PENDING, (session_id,)) if write.deliver_queue else None
    cp = write.checkpoint
    taken = None
    if cp is not None and cp.given:  # a fresh uuid4 is never taken
        taken = await tx.send(_SQL_CHECKPOINT_TAKEN, (session_id, cp.id))
    made = created is not None and await created.fetchone() is not None
    row = await locked.fetchone()
    return TurnState(
        session_id=session_id,
        # A row this write inserted is not the session's state before it: the planner plans
        # the creation, and the rollback of a write it does not apply removes the row.
        session=None if row is None or made else session_read(row[1:]),
        last_seq=0 if row is None else int(row[0]),
        pending=await pending.fetchall() if pending is not None else (),
        checkpoint_taken=taken is not None and await taken.fetchone() is not None,
        # No row (and nothing to create): the planner refuses, by no clock.
        now=time.time() if row is None else float(row[-1]),
    )


def _enqueue_lock_key(schema: str, session_id: str) -> int:
    """A signed 64-bit advisory-lock key for enqueueing to one session of one schema."""
    digest = hashlib.sha256(f"helix_stream.enqueue:{schema}:{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


async def enqueue_state(tx: Tx, session_id: str, request: ContextRequest, cap: int) -> EnqueueState:
    """Take the session's enqueue lock, then read what ``plan_enqueue`` decides on.

    The advisory lock (released at commit) queues the enqueues of one session behind each
    other, so that two cannot both pass the queue cap; it is not the session row, so an
    enqueue never waits for a context pass (one running meanwhile only makes the count high).
    """
    await tx.send(_SQL_ENQUEUE_LOCK, (_enqueue_lock_key(tx.schema, session_id),))
    row = await tx.one(_SQL_ENQUEUE_STATE, {"sid": session_id, "key": request.key})
    assert row is not None  # one row, always
    return EnqueueState(
        session_id=session_id, exists=row[0], key_digest=row[2], queued=int(row[1]), cap=cap
    )


async def rewind_state(tx: Tx, session_id: str, to_seq: int) -> RewindState:
    """Lock the session row and read what ``plan_rewind`` decides on."""
    locked = await tx.send(_SQL_LOCK, (session_id,))
    at_cut = await tx.send(_SQL_ROWS_AT, (session_id, to_seq, to_seq + 1))
    queue = await tx.send(SQL_REWIND_QUEUE, (session_id, to_seq))
    row = await locked.fetchone()
    if row is None:
        raise session_not_found(session_id)
    at = {seq: (role, text) for seq, role, text in await at_cut.fetchall()}
    entries = [
        (qid, key, decode(origin), delivered)
        for qid, key, origin, delivered in await queue.fetchall()
    ]
    # The planner asks for the surviving calls synchronously: fetch them first, and only when
    # some tool's entry is among the candidates (the one case in which it asks).
    calls: set[str] = set()
    if any(origin.get("type") == "tool" for _, _, origin, _ in entries):
        rows = await tx.all(SQL_CALLS, (session_id, to_seq))
        calls = tool_call_ids(decode(text) for (text,) in rows)
    return RewindState(
        session_id=session_id,
        last_seq=int(row[0]),
        cut=(at.get(to_seq), at.get(to_seq + 1)),
        entries=entries,
        surviving_calls=lambda: calls,
        now=float(row[-1]),
    )


async def branch_state(tx: Tx, source_id: str, new_id: str) -> BranchState:
    """Share-lock the source's row and read what ``plan_branch`` decides on."""
    source = await tx.one(_SQL_BRANCH_SOURCE, (source_id,))
    taken = await tx.one(_SQL_EXISTS, (new_id,))
    return BranchState(
        source_id=source_id,
        source=None if source is None else session_read(source[1:]),
        source_last_seq=0 if source is None else int(source[0]),
        target_exists=taken is not None,
        now=time.time() if source is None else float(source[-1]),
    )
