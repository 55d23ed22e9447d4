"""The records a ``Store`` keeps (module docstring of ``_protocol.py``: the log, the
context queue, checkpoints): the session record, a log record, a queue entry, a checkpoint and
what a rewind did. Plain frozen dataclasses, below both the protocol and the turn's
read/write shapes (``_turns.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "JSON",
    "Checkpoint",
    "LogRecord",
    "QueueEntry",
    "RewindResult",
    "SessionRecord",
    "SessionStatus",
]

SessionStatus = Literal["idle", "running", "paused", "failed"]
JSON = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """A session.

    Attributes:
        id: The caller's session id.
        agent_name: The agent the session runs.
        status: ``"idle"``, ``"running"``, ``"paused"`` or ``"failed"``.
        parent_id: The session it was branched from, if any.
        created_at: Unix time of the creation.
        updated_at: Unix time of the last change to the record, or of the last rewind.
        meta: JSON-safe data the app keeps with the session (see ``update_session_meta``).
        lease_token: The token of the lease a running turn holds the session with (README,
            "Reliability notes"), or ``None``: no turn holds it, or a status set by hand
            (``running`` without a lease is held until someone sets another status).
        lease_expires: Unix time the lease ends unless renewed; a ``running`` session whose
            lease has ended belongs to nobody, and the next claim takes it over. Written by
            the store's clock: PostgreSQL's (``now()``), so that replicas whose clocks differ
            agree; the process's for the stores of one machine.
        read_at: The store's clock when the record was read or written (PostgreSQL: the
            database's ``now()``, in the statement that read it), which :meth:`lease_expired`
            judges by; ``None``: this process's clock is the store's. Not compared.

    Example::

        record = await store.get_session("session-1")
        if record is not None:
            print(record.status, record.agent_name, record.meta)
    """

    id: str
    agent_name: str
    status: SessionStatus = "idle"
    parent_id: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    meta: JSON = field(default_factory=dict)
    lease_token: str | None = field(default=None, repr=False)
    lease_expires: float | None = None
    read_at: float | None = field(default=None, compare=False, repr=False)

    def lease_expired(self, now: float | None = None) -> bool:
        """The session is ``running`` under a lease that ended by ``now``: nobody holds it.

        ``now`` defaults to the store's clock when the record was read (``read_at``), else
        this process's: pass it only to ask about another moment.
        """
        if now is None:
            now = self.read_at if self.read_at is not None else time.time()
        return (
            self.status == "running"
            and self.lease_expires is not None
            and self.lease_expires <= now
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LogRecord:
    """One entry of a session's log.

    Attributes:
        seq: Position in the session's log, starting at 1, strictly increasing.
        role: ``"context"`` for a context row, else the message role
            (``"user"``, ``"assistant"``, ``"tool"``, ``"system"``).
        payload: The message dict, or the context row dict.
        created_at: Unix time of the write.

    Example::

        for record in await store.read_log("session-1"):
            print(record.seq, record.role, record.payload)     # messages and context rows, in order
    """

    seq: int
    role: str
    payload: JSON
    created_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueEntry:
    """One ``add_context`` call's items, waiting for the next context pass.

    Attributes:
        id: Store-assigned, increasing in insertion order.
        items: The validated item dicts (``{"kind": ..., ...}``), in order.
        source: ``"app"``, ``"tool"`` or ``"late-answer"``; rows made from it carry this source.
        key: The request key or call-site key, if any.
        origin: Where the items came from (``{"type": "app"|"tool"|"hook", "tool_call_id"?, ...}``).
        delivered_seq: ``None`` while queued; the log seq of its first row once committed.

    Example::

        snapshot = await store.read_snapshot("session-1")
        for entry in snapshot.pending:                         # add_context calls not yet delivered
            print(entry.id, entry.source, entry.key, entry.items)
    """

    id: int
    items: list[JSON]
    source: str
    key: str | None
    origin: JSON
    created_at: float
    delivered_seq: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """The state after a finished step: everything up to ``log_seq`` is that step's past.

    Example::

        checkpoints = await executor.checkpoints("session-1")
        if checkpoints:
            await executor.retry("session-1", checkpoint_id=checkpoints[0].id)   # rewind to it
    """

    id: str
    session_id: str
    step_number: int
    log_seq: int
    state: JSON
    created_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindResult:
    """What :meth:`Store.rewind` changed.

    Attributes:
        removed_records: How many log records were deleted.
        redelivered_entries: Queue ids made undelivered again (id order): the next context
            pass delivers them again.
        dropped_entries: Queue ids deleted with their request keys (id order): tool entries
            whose call the rewind removed.

    Example::

        result = await store.rewind("session-1", to_seq=4)
        print(result.removed_records, result.redelivered_entries, result.dropped_entries)
    """

    removed_records: int
    redelivered_entries: list[int]
    dropped_entries: list[int]
