"""MemoryStore: the Store protocol kept in process memory, for tests and one-shot runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from helix_stream._limits import MAX_QUEUED_ITEMS, check_key, check_session_id
from helix_stream.store._protocol import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    RewindResult,
    SessionRecord,
    SessionStatus,
)
from helix_stream.store._shared import (
    check_conflict_mode,
    check_cut,
    check_expect,
    check_queue_cap,
    check_seq,
    check_status,
    checkpoint_id,
    context_row,
    decode,
    duplicate_checkpoint,
    encode,
    items_digest,
    key_conflict,
    merge_meta,
    message_role,
    plan_rewind,
    queue_full,
    session_exists,
    session_not_found,
    tool_call_ids,
)
from helix_stream.store._turns import (
    Snapshot,
    TurnWrite,
    TurnWriteResult,
    check_turn_write,
)

__all__ = ["MemoryStore"]


# Payloads are kept as JSON text, not dicts: a caller mutating what it passed in or got back
# can never change the store, and reads decode to the same values SQLite returns.
@dataclass(slots=True)
class _Entry:
    id: int
    items: str
    source: str
    key: str | None
    origin: str
    created_at: float
    delivered_seq: int | None = None

    def record(self) -> QueueEntry:
        return QueueEntry(
            id=self.id,
            items=decode(self.items),
            source=self.source,
            key=self.key,
            origin=decode(self.origin),
            created_at=self.created_at,
            delivered_seq=self.delivered_seq,
        )


@dataclass(slots=True)
class _Session:
    id: str
    agent_name: str
    parent_id: str | None
    meta: str
    created_at: float
    updated_at: float
    status: SessionStatus = "idle"
    log: list[tuple[str, str, float]] = field(default_factory=list)  # seq = index + 1
    queue: list[_Entry] = field(default_factory=list)  # every entry, in id order
    pending: list[_Entry] = field(default_factory=list)  # the undelivered ones, in id order
    keys: dict[str, str] = field(default_factory=dict)  # key -> items_digest
    checkpoints: list[tuple[str, int, int, str, float]] = field(default_factory=list)

    def record(self) -> SessionRecord:
        return SessionRecord(
            id=self.id,
            agent_name=self.agent_name,
            status=self.status,
            parent_id=self.parent_id,
            created_at=self.created_at,
            updated_at=self.updated_at,
            meta=decode(self.meta),
        )

    def records(self, start: int) -> list[LogRecord]:
        return [
            LogRecord(seq=start + i + 1, role=role, payload=decode(text), created_at=at)
            for i, (role, text, at) in enumerate(self.log[start:])
        ]


def _queue_rows(session: _Session, texts: list[tuple[str, str]]) -> list[tuple[_Entry, int]]:
    """Add the session's queued items to ``texts`` as rows; return (entry, delivered seq)."""
    delivered: list[tuple[_Entry, int]] = []
    for entry in session.pending:
        delivered.append((entry, len(session.log) + len(texts) + 1))
        origin = decode(entry.origin)
        for item in decode(entry.items):
            row = context_row(
                item, source=entry.source, origin=origin, queue_id=entry.id, key=entry.key
            )
            texts.append(("context", encode(row)))
    return delivered


def _checkpoint_row(
    session: _Session, checkpoint: Checkpoint | None, log_seq: int, now: float
) -> tuple[str, int, int, str, float] | None:
    if checkpoint is None:
        return None
    cp_id = checkpoint_id(checkpoint.id)
    if any(cp[0] == cp_id for cp in session.checkpoints):
        raise duplicate_checkpoint(session.id, cp_id)
    return (cp_id, checkpoint.step_number, log_seq, encode(checkpoint.state), now)


class MemoryStore:
    """An in-process :class:`~helix_stream.store.Store`: nothing survives the process.

    Every write method computes and validates all it will write first, then applies it under
    one ``asyncio.Lock``, so a refusal or a bad payload leaves nothing half-written.

    Args:
        max_queued_items: The most undelivered context items a session's queue may hold; an
            ``enqueue_context`` that would pass it is refused whole.

    Attributes:
        write_transactions: Count of write calls that committed a change. Calls that changed
            nothing (an existing session, a failed compare-and-set, a key dedupe, an empty
            commit, a rewind to the last seq) and calls that raised are not counted.
    """

    def __init__(self, *, max_queued_items: int = MAX_QUEUED_ITEMS) -> None:
        self.max_queued_items = check_queue_cap(max_queued_items)
        self._sessions: dict[str, _Session] = {}
        self._lock = asyncio.Lock()
        self._next_queue_id = 1
        self._closed = False
        self.write_transactions = 0

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this MemoryStore is closed")

    def _session(self, session_id: str) -> _Session:
        self._check_open()
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
        check_session_id(session_id)
        self._check_open()
        meta_text = encode(dict(meta or {}))
        async with self._lock:
            existing = self._sessions.get(session_id)
            if existing is not None:
                return existing.record()
            now = time.time()
            made = _Session(session_id, agent_name, parent_id, meta_text, now, now)
            self._sessions[session_id] = made
            self.write_transactions += 1
            return made.record()

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        check_session_id(session_id)
        self._check_open()
        session = self._sessions.get(session_id)
        return None if session is None else session.record()

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status; with ``expect``, only if the current one is among them."""
        check_session_id(session_id)
        check_status(status)
        expected = check_expect(expect)
        async with self._lock:
            session = self._session(session_id)
            if expected is not None and session.status not in expected:
                return False
            session.status, session.updated_at = status, time.time()
            self.write_transactions += 1
            return True

    async def update_session_meta(self, session_id: str, patch: Mapping[str, Any]) -> SessionRecord:
        """Merge ``patch`` into ``meta`` (``None`` removes a key); return the new record."""
        check_session_id(session_id)
        async with self._lock:
            session = self._session(session_id)
            merged, changed = merge_meta(decode(session.meta), patch)
            if changed:
                session.meta, session.updated_at = encode(merged), time.time()
                self.write_transactions += 1
            return session.record()

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[JSON],
        *,
        checkpoint: Checkpoint | None = None,
    ) -> list[LogRecord]:
        """Append messages and, optionally, a checkpoint at the last seq, all or nothing."""
        check_session_id(session_id)
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
            start = len(session.log)
            session.log.extend((role, text, now) for role, text in rows)
            if cp_row is not None:
                session.checkpoints.append(cp_row)
            self.write_transactions += 1
            return session.records(start)

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        check_session_id(session_id)
        return self._session(session_id).records(max(after_seq, 0))

    async def last_seq(self, session_id: str) -> int:
        """The seq of the last log record; 0 when the log is empty."""
        check_session_id(session_id)
        return len(self._session(session_id).log)

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
        check_session_id(session_id)
        check_key(key)
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
            queued = sum(len(decode(entry.items)) for entry in session.pending)
            if queued + len(items) > self.max_queued_items:
                raise queue_full(session_id, queued, len(items), self.max_queued_items)
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
        check_session_id(session_id)
        return [entry.record() for entry in self._session(session_id).pending]

    async def delivered_context(self, session_id: str) -> list[QueueEntry]:
        """The queue entries already delivered, in id order."""
        check_session_id(session_id)
        queue = self._session(session_id).queue
        return [entry.record() for entry in queue if entry.delivered_seq is not None]

    async def commit_context(
        self, session_id: str, extra_rows: Sequence[JSON] = ()
    ) -> list[LogRecord]:
        """Turn every queued entry, then ``extra_rows``, into context rows in one write."""
        write = TurnWrite(deliver_queue=True, rows=list(extra_rows))
        return (await self.write_turn(session_id, write)).records

    async def read_snapshot(self, session_id: str) -> Snapshot:
        """The session, its log, its last checkpoint and its queue, in one read."""
        check_session_id(session_id)
        self._check_open()
        session = self._sessions.get(session_id)
        if session is None:
            return Snapshot(session=None)
        checkpoints = await self.checkpoints(session_id)
        return Snapshot(
            session=session.record(),
            log=session.records(0),
            checkpoint=checkpoints[-1] if checkpoints else None,
            pending=[entry.record() for entry in session.pending],
        )

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        """Apply one turn boundary in one write (see :class:`~helix_stream.store.TurnWrite`)."""
        check_session_id(session_id)
        self._check_open()
        roles, expected = check_turn_write(write)
        async with self._lock:
            session = self._sessions.get(session_id)
            now = time.time()
            if session is None:
                if write.create is None:
                    raise session_not_found(session_id)
                create = write.create
                made = _Session(
                    session_id, create.agent_name, create.parent_id, encode(create.meta), now, now
                )
            elif expected is not None and session.status not in expected:
                return TurnWriteResult(applied=False, session=session.record())
            target = session or made
            # Everything that can fail is computed before anything changes.
            texts = [(role, encode(m)) for role, m in roles]
            delivered = _queue_rows(target, texts) if write.deliver_queue else []
            texts.extend(("context", encode(row)) for row in write.rows)
            meta_text = target.meta
            if write.meta:
                merged, _ = merge_meta(decode(target.meta), write.meta)
                meta_text = encode(merged)
            cp_row = _checkpoint_row(target, write.checkpoint, len(target.log) + len(texts), now)
            changed = (
                session is None
                or bool(texts)
                or cp_row is not None
                or write.status is not None
                or meta_text != target.meta
            )
            if not changed:
                return TurnWriteResult(applied=True, session=target.record())
            # Nothing below can fail: the write applies whole.
            self._sessions[session_id] = target
            start = len(target.log)
            target.log.extend((role, text, now) for role, text in texts)
            for entry, seq in delivered:
                entry.delivered_seq = seq
            if write.deliver_queue:
                target.pending = []
            if cp_row is not None:
                target.checkpoints.append(cp_row)
            target.status = write.status or target.status
            target.meta, target.updated_at = meta_text, now
            self.write_transactions += 1
            return TurnWriteResult(
                applied=True, session=target.record(), records=target.records(start)
            )

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        check_session_id(session_id)
        return [
            Checkpoint(
                id=cp_id,
                session_id=session_id,
                step_number=step,
                log_seq=log_seq,
                state=decode(state),
                created_at=at,
            )
            for cp_id, step, log_seq, state, at in self._session(session_id).checkpoints
        ]

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        """Truncate the log after ``to_seq`` and fix checkpoints and queue (see ``Store``)."""
        check_session_id(session_id)
        async with self._lock:
            session = self._session(session_id)
            log = session.log
            check_seq(session_id, "to_seq", to_seq, len(log))
            if to_seq == len(log):
                return RewindResult(removed_records=0, redelivered_entries=[], dropped_entries=[])
            check_cut(session_id, to_seq, log[to_seq - 1][:2] if to_seq else None, log[to_seq][:2])
            redelivered, dropped = plan_rewind(
                ((e.id, decode(e.origin), e.delivered_seq) for e in session.queue),
                to_seq,
                lambda: tool_call_ids(
                    decode(text) for role, text, _ in log[:to_seq] if role == "assistant"
                ),
            )
            # Nothing below can fail: the rewind applies whole.
            removed, again, gone = len(log) - to_seq, set(redelivered), set(dropped)
            del log[to_seq:]
            session.checkpoints = [cp for cp in session.checkpoints if cp[2] <= to_seq]
            for entry in session.queue:
                if entry.id in again:
                    entry.delivered_seq = None
                elif entry.id in gone and entry.key is not None:
                    del session.keys[entry.key]
            session.queue = [e for e in session.queue if e.id not in gone]
            session.pending = [e for e in session.queue if e.delivered_seq is None]
            session.updated_at = time.time()
            self.write_transactions += 1
            return RewindResult(
                removed_records=removed, redelivered_entries=redelivered, dropped_entries=dropped
            )

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        """Make ``new_id`` from ``source_id``'s log and checkpoints up to ``upto_seq``."""
        check_session_id(source_id)
        check_session_id(new_id)
        async with self._lock:
            source = self._session(source_id)
            if new_id in self._sessions:
                raise session_exists(new_id)
            check_seq(source_id, "upto_seq", upto_seq, len(source.log))
            now = time.time()
            name = source.agent_name if agent_name is None else agent_name
            made = _Session(new_id, name, source_id, source.meta, now, now)
            made.log = source.log[:upto_seq]  # tuples of immutable values: safe to share
            made.checkpoints = [cp for cp in source.checkpoints if cp[2] <= upto_seq]
            self._sessions[new_id] = made
            self.write_transactions += 1
            return made.record()

    async def close(self) -> None:
        """Mark the store closed; later calls raise RuntimeError. Safe to call twice."""
        self._closed = True
