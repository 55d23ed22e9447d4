"""PostgresStore's history edits: the ``rewind`` and ``branch`` transactions.

Each function is the body of one ``BEGIN … COMMIT`` (run by ``PostgresDatabase._write``) and
returns ``(result, wrote_anything)``. What to redeliver or drop, and which cuts to refuse, is
decided by the rules in ``_shared`` that every store applies.
"""

from __future__ import annotations

import time

from helix_stream.store._postgres_db import SESSION_COLUMNS, Tx, session_record
from helix_stream.store._protocol import RewindResult, SessionRecord
from helix_stream.store._shared import (
    check_cut,
    check_seq,
    decode,
    plan_rewind,
    session_exists,
    session_not_found,
    tool_call_ids,
)

__all__ = ["branch", "rewind"]

_SQL_ROWS_AT = "SELECT seq, role, payload FROM {s}.log WHERE session_id = %s AND seq IN (%s, %s)"
_SQL_CALLS = (
    "SELECT payload FROM {s}.log WHERE session_id = %s AND seq <= %s AND role = 'assistant'"
)
# Only the entries a rewind can touch: still queued, or delivered into the cut-off part.
_SQL_REWIND_QUEUE = (
    "SELECT id, origin, delivered_seq FROM {s}.context_queue WHERE session_id = %s"
    " AND (delivered_seq IS NULL OR delivered_seq > %s) ORDER BY id"
)
_SQL_BRANCH_SESSION = (
    "INSERT INTO {s}.sessions (id, agent_name, status, parent_id, created_at, updated_at, meta,"
    " last_seq) SELECT %s, COALESCE(%s, agent_name), 'idle', id, %s, %s, meta, %s"
    " FROM {s}.sessions WHERE id = %s"
    f" ON CONFLICT (id) DO NOTHING RETURNING {SESSION_COLUMNS}"
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


async def rewind(tx: Tx, session_id: str, to_seq: int) -> tuple[RewindResult, bool]:
    """Truncate the log after ``to_seq``; fix checkpoints and queue (see ``Store.rewind``)."""
    (last,) = await tx.lock_session(session_id)
    check_seq(session_id, "to_seq", to_seq, last)
    if to_seq == last:
        return RewindResult(removed_records=0, redelivered_entries=[], dropped_entries=[]), False
    at = {
        seq: (role, text)
        for seq, role, text in await tx.all(_SQL_ROWS_AT, (session_id, to_seq, to_seq + 1))
    }
    check_cut(session_id, to_seq, at.get(to_seq), at.get(to_seq + 1))
    entries = [
        (qid, decode(origin), delivered)
        for qid, origin, delivered in await tx.all(_SQL_REWIND_QUEUE, (session_id, to_seq))
    ]
    # plan_rewind asks for the surviving calls synchronously: fetch them first, and only when
    # some tool entry is among the candidates (the same condition under which it would ask).
    calls: set[str] = set()
    if any(origin.get("type") == "tool" for _, origin, _ in entries):
        rows = await tx.all(_SQL_CALLS, (session_id, to_seq))
        calls = tool_call_ids(decode(text) for (text,) in rows)
    redelivered, dropped = plan_rewind(entries, to_seq, lambda: calls)
    removed = await tx.execute(
        "DELETE FROM {s}.log WHERE session_id = %s AND seq > %s", (session_id, to_seq)
    )
    await tx.execute(
        "DELETE FROM {s}.checkpoints WHERE session_id = %s AND log_seq > %s", (session_id, to_seq)
    )
    if redelivered:
        await tx.execute(
            "UPDATE {s}.context_queue SET delivered_seq = NULL WHERE id = ANY(%s)", (redelivered,)
        )
    if dropped:
        # context_keys rows reference their entry ON DELETE CASCADE: the keys go with them.
        await tx.execute("DELETE FROM {s}.context_queue WHERE id = ANY(%s)", (dropped,))
    await tx.execute(
        "UPDATE {s}.sessions SET updated_at = %s, last_seq = %s WHERE id = %s",
        (time.time(), to_seq, session_id),
    )
    result = RewindResult(
        removed_records=removed, redelivered_entries=redelivered, dropped_entries=dropped
    )
    return result, True


async def branch(
    tx: Tx, source_id: str, new_id: str, upto_seq: int, agent_name: str | None
) -> tuple[SessionRecord, bool]:
    """Make ``new_id`` from ``source_id`` up to ``upto_seq`` (see ``Store.branch``)."""
    # FOR SHARE: no rewind or append of the source can change the copied prefix meanwhile,
    # while other branches of the same source may proceed.
    source = await tx.one("SELECT last_seq FROM {s}.sessions WHERE id = %s FOR SHARE", (source_id,))
    if source is None:
        raise session_not_found(source_id)
    if await tx.one("SELECT 1 FROM {s}.sessions WHERE id = %s", (new_id,)) is not None:
        raise session_exists(new_id)
    check_seq(source_id, "upto_seq", upto_seq, source[0])
    now = time.time()
    row = await tx.one(_SQL_BRANCH_SESSION, (new_id, agent_name, now, now, upto_seq, source_id))
    if row is None:  # created by another process since the check above
        raise session_exists(new_id)
    # Neither context_queue nor context_keys is copied: the source's queue stays the source's.
    await tx.execute(_SQL_COPY_LOG, (new_id, source_id, upto_seq))
    await tx.execute(_SQL_COPY_CHECKPOINTS, (new_id, source_id, upto_seq))
    return session_record(row), True
