"""MemoryStore: the Store protocol kept in process memory, for tests and one-shot runs.

This module also owns the few helpers every store shares, so that they encode payloads,
compare request keys and word their refusals identically: :func:`encode`,
:func:`items_digest`, :func:`context_row`, :func:`message_role`, :func:`checkpoint_id`,
:func:`session_not_found`, :func:`key_conflict` and the argument checks.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from helix_stream.errors import ContextKeyConflictError, SessionNotFoundError
from helix_stream.store._protocol import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    SessionRecord,
    SessionStatus,
)

__all__ = ["MemoryStore"]

_STATUSES: frozenset[str] = frozenset(get_args(SessionStatus))


# The protocol declares its records through an alias, ``_dc = dataclass(...)``, which mypy does
# not see through: it types them as classes without fields, so every direct constructor call
# fails strict checking. These typed constructors keep the call sites checked in the meantime.
def session_record(
    *,
    id: str,
    agent_name: str,
    status: SessionStatus,
    parent_id: str | None,
    created_at: float,
    updated_at: float,
    meta: JSON,
) -> SessionRecord:
    make: Any = SessionRecord
    return cast(
        SessionRecord,
        make(
            id=id,
            agent_name=agent_name,
            status=status,
            parent_id=parent_id,
            created_at=created_at,
            updated_at=updated_at,
            meta=meta,
        ),
    )


def log_record(*, seq: int, role: str, payload: JSON, created_at: float) -> LogRecord:
    make: Any = LogRecord
    return cast(LogRecord, make(seq=seq, role=role, payload=payload, created_at=created_at))


def queue_entry(
    *,
    id: int,
    items: list[JSON],
    source: str,
    key: str | None,
    origin: JSON,
    created_at: float,
    delivered_seq: int | None,
) -> QueueEntry:
    make: Any = QueueEntry
    return cast(
        QueueEntry,
        make(
            id=id,
            items=items,
            source=source,
            key=key,
            origin=origin,
            created_at=created_at,
            delivered_seq=delivered_seq,
        ),
    )


def checkpoint_record(
    *, id: str, session_id: str, step_number: int, log_seq: int, state: JSON, created_at: float
) -> Checkpoint:
    make: Any = Checkpoint
    return cast(
        Checkpoint,
        make(
            id=id,
            session_id=session_id,
            step_number=step_number,
            log_seq=log_seq,
            state=state,
            created_at=created_at,
        ),
    )


def encode(value: object) -> str:
    """Compact JSON text of a payload; raises TypeError/ValueError if it is not strict JSON.

    ``allow_nan=False`` because NaN/Infinity are not JSON: a provider or Postgres ``jsonb``
    would refuse them later, far from the write that let them in.
    """
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def items_digest(items: Sequence[JSON]) -> str:
    """The request-key fingerprint: SHA-256 of the items' canonical JSON.

    ``sort_keys`` makes two dicts with the same fields the same request whatever their key
    order; the list order still counts (same items in the same order = same request).
    """
    canonical = json.dumps(
        list(items), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def context_row(item: JSON, *, source: str, origin: JSON, queue_id: int, key: str | None) -> JSON:
    """The row payload committed for one queued item (see ``Store.commit_context``)."""
    # The item's own source wins (the executor has already forced "tool" on a tool's items).
    return {**item, "source": item.get("source", source), "origin": {**origin, "queue_id": queue_id, "key": key}}


def message_role(message: Mapping[str, Any]) -> str:
    """The log role of a message: its ``"role"`` field, which must be a string."""
    role = message.get("role")
    if not isinstance(role, str):
        raise ValueError(f"a message needs a string 'role' field; got {role!r}")
    return role


def checkpoint_id(given: str) -> str:
    """Keep a caller's checkpoint id; make a uuid4 hex one when it is empty."""
    return given or uuid.uuid4().hex


def check_status(status: str) -> None:
    if status not in _STATUSES:
        raise ValueError(f"unknown session status {status!r}; use one of {sorted(_STATUSES)}")


def check_expect(expect: Sequence[str] | None) -> tuple[str, ...] | None:
    """Validate ``set_status(expect=...)``; a bare string would silently match by substring."""
    if expect is None:
        return None
    if isinstance(expect, str):
        raise TypeError(f"expect must be a list of statuses, e.g. [{expect!r}], not a string")
    for status in expect:
        check_status(status)
    return tuple(expect)


def check_conflict_mode(mode: str) -> None:
    if mode not in ("raise", "ignore"):
        raise ValueError(f"on_key_conflict must be 'raise' or 'ignore', not {mode!r}")


def session_not_found(session_id: str) -> SessionNotFoundError:
    return SessionNotFoundError(
        f"No session {session_id!r}; nothing was written. Create it first "
        "(create_session, or executor.run) or check the id."
    )


def key_conflict(session_id: str, key: str) -> ContextKeyConflictError:
    return ContextKeyConflictError(
        f"Context key {key!r} was already used in session {session_id!r} with other items; "
        "nothing was written. Retry with exactly the same items, or use a new key for a "
        "new request."
    )


def duplicate_checkpoint(session_id: str, cp_id: str) -> ValueError:
    return ValueError(
        f"checkpoint {cp_id!r} already exists in session {session_id!r}; nothing was written. "
        "Pass an empty id to have the store make a fresh one."
    )


@dataclass(slots=True)
class _Entry:
    # Payloads are kept as JSON text, not dicts: a caller mutating what it passed in or got
    # back can never change the store, and reads decode to the same values SQLite returns.
    id: int
    items: str
    source: str
    key: str | None
    origin: str
    created_at: float
    delivered_seq: int | None = None

    def record(self) -> QueueEntry:
        return queue_entry(
            id=self.id,
            items=json.loads(self.items),
            source=self.source,
            key=self.key,
            origin=json.loads(self.origin),
            created_at=self.created_at,
            delivered_seq=self.delivered_seq,
        )


@dataclass(slots=True)
class _Session:
    record: SessionRecord
    log: list[tuple[str, str, float]] = field(default_factory=list)  # seq = index + 1
    queue: list[_Entry] = field(default_factory=list)
    pending: list[_Entry] = field(default_factory=list)
    keys: dict[str, str] = field(default_factory=dict)  # key -> items_digest
    checkpoints: list[tuple[str, int, int, str, float]] = field(default_factory=list)


class MemoryStore:
    """An in-process :class:`~helix_stream.store.Store`: nothing survives the process.

    Every write method computes and validates all it will write first, then applies it under
    one ``asyncio.Lock``, so a refusal or a bad payload leaves nothing half-written.

    Attributes:
        write_transactions: Count of write calls that committed a change. Calls that changed
            nothing (an existing session, a failed compare-and-set, a key dedupe, an empty
            commit) and calls that raised are not counted.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._lock = asyncio.Lock()
        self._next_queue_id = 1
        self._closed = False
        self.write_transactions = 0

    def _session(self, session_id: str) -> _Session:
        if self._closed:
            raise RuntimeError("this MemoryStore is closed")
        session = self._sessions.get(session_id)
        if session is None:
            raise session_not_found(session_id)
        return session

    async def create_session(
        self,
        session_id: str,
        *,
        agent_name: str,
        parent_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> SessionRecord:
        """Create the session if it does not exist; return it either way (never overwrites)."""
        if self._closed:
            raise RuntimeError("this MemoryStore is closed")
        meta_json = json.loads(encode(dict(meta or {})))
        async with self._lock:
            existing = self._sessions.get(session_id)
            if existing is not None:
                return existing.record
            now = time.time()
            record = session_record(
                id=session_id,
                agent_name=agent_name,
                status="idle",
                parent_id=parent_id,
                created_at=now,
                updated_at=now,
                meta=meta_json,
            )
            self._sessions[session_id] = _Session(record=record)
            self.write_transactions += 1
            return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        if self._closed:
            raise RuntimeError("this MemoryStore is closed")
        session = self._sessions.get(session_id)
        return None if session is None else session.record

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status; with ``expect``, only if the current one is among them."""
        check_status(status)
        expected = check_expect(expect)
        async with self._lock:
            session = self._session(session_id)
            if expected is not None and session.record.status not in expected:
                return False
            session.record = session_record(
                id=session.record.id,
                agent_name=session.record.agent_name,
                status=status,
                parent_id=session.record.parent_id,
                created_at=session.record.created_at,
                updated_at=time.time(),
                meta=session.record.meta,
            )
            self.write_transactions += 1
            return True

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[JSON],
        *,
        checkpoint: Checkpoint | None = None,
    ) -> list[LogRecord]:
        """Append messages and, optionally, a checkpoint at the last seq, all or nothing."""
        async with self._lock:
            session = self._session(session_id)
            rows = [(message_role(m), encode(m)) for m in messages]
            cp_row = None
            now = time.time()
            if checkpoint is not None:
                cp_id = checkpoint_id(checkpoint.id)
                if any(cp[0] == cp_id for cp in session.checkpoints):
                    raise duplicate_checkpoint(session_id, cp_id)
                log_seq = len(session.log) + len(rows)
                cp_row = (cp_id, checkpoint.step_number, log_seq, encode(checkpoint.state), now)
            if not rows and cp_row is None:
                return []
            first = len(session.log) + 1
            session.log.extend((role, text, now) for role, text in rows)
            if cp_row is not None:
                session.checkpoints.append(cp_row)
            self.write_transactions += 1
            return [
                log_record(seq=first + i, role=role, payload=json.loads(text), created_at=now)
                for i, (role, text) in enumerate(rows)
            ]

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        session = self._session(session_id)
        start = max(after_seq, 0)
        return [
            log_record(seq=start + i + 1, role=role, payload=json.loads(text), created_at=at)
            for i, (role, text, at) in enumerate(session.log[start:])
        ]

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

        Items with no key are always recorded. An empty ``items`` records nothing and
        returns 0 (it leaves no key behind either, since there was no request to remember).
        """
        check_conflict_mode(on_key_conflict)
        async with self._lock:
            session = self._session(session_id)
            digest = items_digest(items) if key is not None else ""
            if key is not None and key in session.keys:
                if session.keys[key] == digest or on_key_conflict == "ignore":
                    return 0
                raise key_conflict(session_id, key)
            if not items:
                return 0
            entry = _Entry(
                id=self._next_queue_id,
                items=encode(list(items)),
                source=source,
                key=key,
                origin=encode(dict(origin)),
                created_at=time.time(),
            )
            self._next_queue_id += 1
            session.queue.append(entry)
            session.pending.append(entry)
            if key is not None:
                session.keys[key] = digest
            self.write_transactions += 1
            return len(items)

    async def pending_context(self, session_id: str) -> list[QueueEntry]:
        """The queue entries not yet delivered, in id order."""
        return [entry.record() for entry in self._session(session_id).pending]

    async def commit_context(
        self, session_id: str, extra_rows: Sequence[JSON] = ()
    ) -> list[LogRecord]:
        """Turn every queued entry, then ``extra_rows``, into context rows in one write."""
        async with self._lock:
            session = self._session(session_id)
            payloads: list[JSON] = []
            delivered: list[tuple[_Entry, int]] = []
            for entry in session.pending:
                delivered.append((entry, len(session.log) + len(payloads) + 1))
                origin = json.loads(entry.origin)
                payloads.extend(
                    context_row(
                        item, source=entry.source, origin=origin, queue_id=entry.id, key=entry.key
                    )
                    for item in json.loads(entry.items)
                )
            payloads.extend(extra_rows)
            texts = [encode(p) for p in payloads]  # the only step that can fail: before writing
            if not texts:
                return []
            now = time.time()
            first = len(session.log) + 1
            session.log.extend(("context", text, now) for text in texts)
            for entry, seq in delivered:
                entry.delivered_seq = seq
            session.pending.clear()
            self.write_transactions += 1
            return [
                log_record(seq=first + i, role="context", payload=json.loads(text), created_at=now)
                for i, text in enumerate(texts)
            ]

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        return [
            checkpoint_record(
                id=cp_id,
                session_id=session_id,
                step_number=step,
                log_seq=log_seq,
                state=json.loads(state),
                created_at=at,
            )
            for cp_id, step, log_seq, state, at in self._session(session_id).checkpoints
        ]

    async def close(self) -> None:
        """Mark the store closed; later calls raise RuntimeError. Safe to call twice."""
        self._closed = True
