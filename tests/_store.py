"""Test helpers over any Store: the writes and reads tests set sessions up and look at them with.

The ``Store`` protocol is what the session engine uses; these are the shorter spellings tests
want, each built on that protocol (``write_turn``, ``read_snapshot``, ``read_log``), so they
work on every store and prove nothing a store does on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from helix_stream.store import (
    Checkpoint,
    LogRecord,
    NewSession,
    QueueEntry,
    SessionRecord,
    Store,
    TurnWrite,
)
from helix_stream.store._shared import session_not_found

JSON = dict[str, Any]


async def create_session(
    store: Store,
    session_id: str,
    *,
    agent_name: str = "agent",
    parent_id: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> SessionRecord:
    """Create the session if it does not exist; return it either way (never overwrites)."""
    new = NewSession(agent_name=agent_name, parent_id=parent_id, meta=dict(meta or {}))
    return (await store.write_turn(session_id, TurnWrite(create=new))).session


async def append_messages(
    store: Store,
    session_id: str,
    messages: Sequence[JSON],
    *,
    checkpoint: Checkpoint | None = None,
) -> list[LogRecord]:
    """Append messages (and a checkpoint at the last seq) in one write; the new records."""
    write = TurnWrite(messages=messages, checkpoint=checkpoint)
    return (await store.write_turn(session_id, write)).records


async def commit_context(
    store: Store, session_id: str, rows: Sequence[JSON] = ()
) -> list[LogRecord]:
    """A context pass: every queued entry, then ``rows``, as context rows in one write."""
    write = TurnWrite(deliver_queue=True, rows=rows)
    return (await store.write_turn(session_id, write)).records


async def pending_context(store: Store, session_id: str) -> list[QueueEntry]:
    """The undelivered queue entries, in id order; SessionNotFoundError with no session."""
    snap = await store.read_snapshot(session_id)
    if snap.session is None:
        raise session_not_found(session_id)
    return snap.pending


async def delivered(store: Store, session_id: str) -> dict[int, int]:
    """Queue id → the seq of its first row, for every entry whose rows the log holds."""
    first: dict[int, int] = {}
    for record in await store.read_log(session_id):
        origin = record.payload.get("origin") if record.role == "context" else None
        if isinstance(origin, dict) and isinstance(origin.get("queue_id"), int):
            first.setdefault(origin["queue_id"], record.seq)
    return first
