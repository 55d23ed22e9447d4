"""PostgresStore's writes: each applies a plan of ``_plan``, inside the caller's transaction.

The primitives are few — append log rows (marking the queue entries they deliver), insert a
checkpoint, update a session, insert a queue entry with its key, cut a session back, copy one —
and nothing here decides anything: the planner did, on the state ``_read`` locked. Statements
are sent without waiting for their results where the caller runs pipelined (they go out with
``COMMIT``); a failure rolls back the whole transaction.
"""

from __future__ import annotations

import time

from helix_stream.store._plan import ContextRequest, TurnPlan
from helix_stream.store._plan_history import RewindPlan
from helix_stream.store._records import SessionRecord
from helix_stream.store._shared import encode, session_exists
from helix_stream.store.postgres._db import Tx

__all__ = ["apply_branch", "apply_enqueue", "apply_rewind", "apply_turn"]

# One statement appends the rows, marks the queue entries they came from delivered, and
# updates the session (its counter ``last_seq`` too): one statement for every write of a
# context pass. (The CTEs touch different tables, so sharing one snapshot is harmless; the
# caller holds the session lock.) The session and IS NULL conditions let the update find its
# entries through the small context_queue_pending index instead of scanning the whole queue.
# Arrays go as binary (%b): no per-element quoting of JSON text on the way out.
_SQL_APPEND = """WITH appended AS (
    INSERT INTO {s}.log (session_id, seq, role, payload, created_at)
    SELECT %(sid)s, t.seq, t.role, t.payload, %(now)s
    FROM unnest(%(seqs)b::bigint[], %(roles)b::text[], %(payloads)b::json[])
        AS t(seq, role, payload)
), delivered AS (
    UPDATE {s}.context_queue q SET delivered_seq = d.seq
    FROM unnest(%(queue_ids)b::bigint[], %(firsts)b::bigint[]) AS d(id, seq)
    WHERE q.id = d.id AND q.session_id = %(sid)s AND q.delivered_seq IS NULL
)
UPDATE {s}.sessions SET last_seq = %(last)s, status = %(status)s,
    meta = COALESCE(%(meta)s::json, meta), updated_at = %(updated)s,
    lease_token = %(lease)s, lease_expires = %(expires)s WHERE id = %(sid)s"""
# COALESCE: a plan that keeps the meta has none to write.
_SQL_UPDATE_SESSION = (
    "UPDATE {s}.sessions SET status = %(status)s, meta = COALESCE(%(meta)s::json, meta),"
    " updated_at = %(updated)s, lease_token = %(lease)s, lease_expires = %(expires)s"
    " WHERE id = %(sid)s"
)
_SQL_INSERT_CHECKPOINT = (
    "INSERT INTO {s}.checkpoints (session_id, id, step_number, log_seq, state, created_at)"
    " VALUES (%s, %s, %s, %s, %s, %s)"
)
_SQL_ENQUEUE = (
    "INSERT INTO {s}.context_queue (session_id, items, source, key, origin, created_at)"
    " VALUES (%(sid)s, %(items)s::json, %(source)s, %(key)s, %(origin)s::json, %(now)s)"
)
# One statement claims the key and inserts the entry, so a lost claim inserts nothing. The
# foreign key from the key row to its entry is checked at the end of the statement, once both
# exist. The claim can only be lost to a writer that did not take the enqueue lock.
_SQL_ENQUEUE_KEYED = """WITH claimed AS (
    INSERT INTO {s}.context_keys (session_id, key, items_sha256, queue_id)
    VALUES (%(sid)s, %(key)s, %(digest)s,
            nextval(pg_get_serial_sequence('{s}.context_queue', 'id')))
    ON CONFLICT (session_id, key) DO NOTHING
    RETURNING queue_id)
INSERT INTO {s}.context_queue (id, session_id, items, source, key, origin, created_at)
SELECT queue_id, %(sid)s, %(items)s::json, %(source)s, %(key)s, %(origin)s::json, %(now)s
FROM claimed"""
_SQL_BRANCH_SESSION = (
    "INSERT INTO {s}.sessions (id, agent_name, status, parent_id, created_at, updated_at, meta,"
    " last_seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING RETURNING 1"
)
_SQL_COPY_LOG = (
    "INSERT INTO {s}.log (session_id, seq, role, payload, created_at)"
    " SELECT %s, seq, role, payload, created_at FROM {s}.log WHERE session_id = %s AND seq <= %s"
)
# ORDER BY ord: the copies draw new ``ord`` values in the same order, so they list oldest first.
_SQL_COPY_CHECKPOINTS = (
    "INSERT INTO {s}.checkpoints (session_id, id, step_number, log_seq, state, created_at)"
    " SELECT %s, id, step_number, log_seq, state, created_at FROM {s}.checkpoints"
    " WHERE session_id = %s AND log_seq <= %s ORDER BY ord"
)


async def apply_turn(tx: Tx, plan: TurnPlan) -> None:
    """Write what ``plan_turn_write`` decided (a plan that changes something).

    The session's row exists here even when the plan creates it: ``_read.turn_state`` inserted
    it to lock it. Nothing is read back: every statement goes out with ``COMMIT``.
    """
    session = plan.session
    params = {
        "sid": session.id,
        "status": session.status,
        "meta": plan.meta,
        "now": plan.now,
        "updated": session.updated_at,  # a heartbeat renews the lease only
        "lease": session.lease_token,
        "expires": session.lease_expires,
    }
    cp = plan.checkpoint
    if cp is not None:
        await tx.send(
            _SQL_INSERT_CHECKPOINT,
            (session.id, cp.id, cp.step_number, cp.log_seq, cp.state, plan.now),
        )
    if not plan.rows:
        await tx.send(_SQL_UPDATE_SESSION, params)
        return
    await tx.send(
        _SQL_APPEND,
        {
            **params,
            "seqs": [row.seq for row in plan.rows],
            "roles": [row.role for row in plan.rows],
            "payloads": [row.payload for row in plan.rows],
            "queue_ids": [qid for qid, _ in plan.delivered],
            "firsts": [first for _, first in plan.delivered],
            "last": plan.last_seq,
        },
    )


async def apply_enqueue(tx: Tx, session_id: str, request: ContextRequest) -> bool:
    """Insert the entry (and claim its key) that ``plan_enqueue`` let in; return ``False``
    when another writer's claim of the key won (nothing was inserted)."""
    values = {
        "sid": session_id,
        "items": request.items,
        "source": request.source,
        "key": request.key,
        "origin": request.origin,
        "digest": request.digest,
        "now": time.time(),
    }
    if request.key is None:
        await tx.send(_SQL_ENQUEUE, values)  # always one row: its count need not be read
        return True
    return bool(await tx.execute(_SQL_ENQUEUE_KEYED, values))


async def apply_rewind(tx: Tx, session_id: str, plan: RewindPlan) -> None:
    """Cut the log and checkpoints after ``plan.to_seq`` and fix the queue as planned."""
    await tx.send(
        "DELETE FROM {s}.log WHERE session_id = %s AND seq > %s", (session_id, plan.to_seq)
    )
    await tx.send(
        "DELETE FROM {s}.checkpoints WHERE session_id = %s AND log_seq > %s",
        (session_id, plan.to_seq),
    )
    if plan.redelivered:
        await tx.send(
            "UPDATE {s}.context_queue SET delivered_seq = NULL WHERE id = ANY(%s)",
            (list(plan.redelivered),),
        )
    if plan.dropped:
        # context_keys rows reference their entry ON DELETE CASCADE: the keys go with them.
        await tx.send("DELETE FROM {s}.context_queue WHERE id = ANY(%s)", (list(plan.dropped),))
    await tx.send(
        "UPDATE {s}.sessions SET updated_at = %s, last_seq = %s WHERE id = %s",
        (plan.now, plan.to_seq, session_id),
    )


async def apply_branch(tx: Tx, source_id: str, record: SessionRecord, upto_seq: int) -> None:
    """Insert the branch's session and copy the source's log and checkpoints into it.

    Raises:
        StateError: another process created a session with the new id since it was read.
    """
    inserted = await tx.one(
        _SQL_BRANCH_SESSION,
        (record.id, record.agent_name, record.status, record.parent_id, record.created_at,
         record.updated_at, encode(record.meta), upto_seq),
    )  # fmt: skip
    if inserted is None:
        raise session_exists(record.id)
    # Neither context_queue nor context_keys is copied: the source's queue stays the source's.
    await tx.execute(_SQL_COPY_LOG, (record.id, source_id, upto_seq))
    await tx.execute(_SQL_COPY_CHECKPOINTS, (record.id, source_id, upto_seq))
