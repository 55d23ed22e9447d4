"""The ``Store`` protocol and the records it keeps.

A store holds, per session: the session record, the append-only **log** (every message and
context row, each with a per-session sequence 1, 2, 3, ...), the **context queue** (items
added but not yet committed as rows), **request keys** (for idempotent ``add_context``), and
**checkpoints** (one per finished step). Every method that writes does so in one transaction:
it writes everything or nothing.

Payloads are plain JSON-safe dicts. A message payload is the OpenAI-format message exactly as
it is sent to the model (so rendering the log again gives the same bytes). A context row
payload is ``{"kind", "source", ...item fields, "cursor"?, "origin"}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = [
    "Checkpoint",
    "LogRecord",
    "QueueEntry",
    "SessionRecord",
    "SessionStatus",
    "Store",
]

SessionStatus = Literal["idle", "running", "paused", "failed"]
JSON = dict[str, Any]



@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    id: str
    agent_name: str
    status: SessionStatus = "idle"
    parent_id: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    meta: JSON = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogRecord:
    """One entry of a session's log.

    Attributes:
        seq: Position in the session's log, starting at 1, strictly increasing.
        role: ``"context"`` for a context row, else the message role
            (``"user"``, ``"assistant"``, ``"tool"``, ``"system"``).
        payload: The message dict, or the context row dict.
        created_at: Unix time of the write.
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
    """The state after a finished step: everything up to ``log_seq`` is that step's past."""

    id: str
    session_id: str
    step_number: int
    log_seq: int
    state: JSON
    created_at: float


@runtime_checkable
class Store(Protocol):
    """Durable sessions. Implementations: MemoryStore, SQLiteStore (and PostgresStore).

    All methods are coroutines. Every write is one transaction, and implementations count
    them in an int attribute ``write_transactions`` (committed writes only; tests use it to
    prove "one transaction per context pass"). Methods that take a
    ``session_id`` raise :class:`~helix_stream.errors.SessionNotFoundError` when there is no
    such session (and write nothing), except :meth:`create_session`.
    """

    write_transactions: int

    async def create_session(
        self,
        session_id: str,
        *,
        agent_name: str,
        parent_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> SessionRecord:
        """Create the session if it does not exist; return it either way (never overwrites)."""
        ...

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        ...

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status. With ``expect``, only if the current status is one of them
        (a compare-and-set); returns whether it was set."""
        ...

    async def append_messages(
        self, session_id: str, messages: Sequence[JSON], *, checkpoint: Checkpoint | None = None
    ) -> list[LogRecord]:
        """Append messages (role from ``payload["role"]``) and, optionally, a checkpoint whose
        ``log_seq`` the store sets to the last appended seq — all in one transaction."""
        ...

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        ...

    async def enqueue_context(
        self,
        session_id: str,
        items: Sequence[JSON],
        *,
        source: str,
        origin: Mapping[str, Any],
        key: str | None = None,
        on_key_conflict: Literal["raise", "ignore"] = "raise",
    ) -> int:
        """Queue items for the next context pass; return how many were recorded.

        One transaction: with a ``key`` seen before (in this session) and the same items,
        nothing is written and 0 is returned; with a key seen before and other items,
        ``on_key_conflict="raise"`` raises ContextKeyConflictError and ``"ignore"`` returns 0
        (first wins) — nothing written either way. Concurrent calls with one key record once.
        """
        ...

    async def pending_context(self, session_id: str) -> list[QueueEntry]:
        """The queue entries not yet delivered, in order (read-only)."""
        ...

    async def commit_context(
        self, session_id: str, extra_rows: Sequence[JSON] = ()
    ) -> list[LogRecord]:
        """The context pass's single transaction.

        Takes every undelivered queue entry (in id order), appends one context row per item
        (payload: the item, with ``"source"`` from the entry unless the item names its own,
        and ``"origin"``: the entry's origin with ``"queue_id"`` and ``"key"`` added), marks the entries delivered, then
        appends ``extra_rows`` (already complete row payloads: hook and memory rows), and
        returns the new records in order. With nothing queued and no extra rows it writes
        nothing and returns ``[]``.
        """
        ...

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        ...

    async def close(self) -> None:
        """Release connections and threads."""
        ...
