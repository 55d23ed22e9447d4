"""MemoryStore: the Store protocol kept in process memory, for tests and one-shot runs.

Each write reads its state from the session objects, asks a planner (``_plan``) what to do
(the same planner SQLiteStore and PostgresStore ask), and applies the plan. Nothing can fail
while a plan is applied, so a refusal or a bad payload leaves nothing half-written.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace

from helix_stream._limits import MAX_QUEUED_ITEMS, check_session_id
from helix_stream.store._features import PendingRow
from helix_stream.store._plan import (
    CheckedWrite,
    ContextRequest,
    EnqueueState,
    TurnPlan,
    TurnState,
    plan_enqueue,
    plan_turn_write,
)
from helix_stream.store._plan_history import (
    BranchState,
    RewindPlan,
    RewindState,
    plan_branch,
    plan_rewind,
    tool_call_ids,
)
from helix_stream.store._records import (
    Checkpoint,
    LogRecord,
    QueueEntry,
    RewindResult,
    SessionRecord,
)
from helix_stream.store._shared import (
    LEASE_RENEW_SECONDS,
    LEASE_SECONDS,
    check_lease_options,
    check_queue_cap,
    decode,
    session_not_found,
    sign_in_pending,
)
from helix_stream.store._turns import Snapshot, TurnWriteResult
from helix_stream.store._writes import StoreWrites

__all__ = ["MemoryAuthTables", "MemoryStore"]


# Payloads are kept as JSON text, not dicts: a caller mutating what it passed in or got back
# can never change the store, and reads decode to the same values SQLite returns.
@dataclass(slots=True)
class _Entry:
    id: int
    items: str
    count: int
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
    head: SessionRecord  # all but meta, which is ``meta`` (handed out decoded afresh)
    meta: str
    log: list[tuple[str, str, float]] = field(default_factory=list)  # seq = index + 1
    queue: list[_Entry] = field(default_factory=list)  # every entry, in id order
    pending: list[_Entry] = field(default_factory=list)  # the undelivered ones, in id order
    keys: dict[str, str] = field(default_factory=dict)  # key -> items_digest
    # (id, step_number, log_seq, state JSON, created_at), oldest first
    checkpoints: list[tuple[str, int, int, str, float]] = field(default_factory=list)

    @property
    def record(self) -> SessionRecord:
        # Judged by the clock when it is read (the process's), not when it was written.
        return replace(self.head, meta=decode(self.meta), read_at=None)

    def records(self, start: int) -> list[LogRecord]:
        return [
            LogRecord(seq=start + i + 1, role=role, payload=decode(text), created_at=at)
            for i, (role, text, at) in enumerate(self.log[start:])
        ]

    def checkpoint_records(self) -> list[Checkpoint]:
        return [
            Checkpoint(
                id=cp_id,
                session_id=self.head.id,
                step_number=step,
                log_seq=log_seq,
                state=decode(state),
                created_at=at,
            )
            for cp_id, step, log_seq, state, at in self.checkpoints
        ]


class MemoryStore(StoreWrites):
    """An in-process :class:`~helix_stream.store.Store`: nothing survives the process.

    Args:
        max_queued_items: The most undelivered context items a session's queue may hold; an
            ``enqueue_context`` that would pass it is refused whole.
        lease_seconds: How long a running turn's lease lasts unless renewed (README,
            "Reliability notes"); one process, so it only matters to a turn whose task is gone.
        lease_renew_seconds: How often a running turn renews it (at most half the lease).

    Attributes:
        sign_in_table: The pending sign-ins, in memory.
        token_table: ``EncryptedTokenStore``'s rows, in memory.
        stream_log: ``None``: one process, which follows its turns' streams itself.
        write_transactions: Count of write calls that committed a change. Calls that changed
            nothing (an existing session, a failed compare-and-set, a key dedupe, an empty
            commit, a rewind to the last seq) and calls that raised are not counted.

    Example::

        executor = hs.Executor(store=hs.MemoryStore())        # tests and one-shot runs
    """

    def __init__(
        self,
        *,
        max_queued_items: int = MAX_QUEUED_ITEMS,
        lease_seconds: float = LEASE_SECONDS,
        lease_renew_seconds: float = LEASE_RENEW_SECONDS,
    ) -> None:
        self.max_queued_items = check_queue_cap(max_queued_items)
        self.lease_seconds, self.lease_renew_seconds = check_lease_options(
            lease_seconds, lease_renew_seconds
        )
        self._sessions: dict[str, _Session] = {}
        self._lock = asyncio.Lock()
        self._next_queue_id = 1
        self._closed = False
        self.write_transactions = 0
        tables = MemoryAuthTables(self)
        # Sign-ins and tokens live as long as this object; no other process resumes a stream.
        self.sign_in_table, self.token_table = tables, tables
        self.stream_log: None = None

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this MemoryStore is closed")

    def _session(self, session_id: str) -> _Session:
        check_session_id(session_id)
        self._check_open()
        session = self._sessions.get(session_id)
        if session is None:
            raise session_not_found(session_id)
        return session

    # -- reads -------------------------------------------------------------------------------

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        check_session_id(session_id)
        self._check_open()
        session = self._sessions.get(session_id)
        return None if session is None else session.record

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        return self._session(session_id).records(max(after_seq, 0))

    async def last_seq(self, session_id: str) -> int:
        """The seq of the last log record; 0 when the log is empty."""
        return len(self._session(session_id).log)

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        return self._session(session_id).checkpoint_records()

    async def read_snapshot(self, session_id: str) -> Snapshot:
        """The session, its log, its last checkpoint and its queue, in one read."""
        check_session_id(session_id)
        self._check_open()
        session = self._sessions.get(session_id)
        if session is None:
            return Snapshot(session=None)
        checkpoints = session.checkpoint_records()
        return Snapshot(
            session=session.record,
            log=session.records(0),
            checkpoint=checkpoints[-1] if checkpoints else None,
            pending=[entry.record() for entry in session.pending],
        )

    # -- writes: read the state, plan, apply ---------------------------------------------------

    async def _write_turn(self, session_id: str, checked: CheckedWrite) -> TurnWriteResult:
        self._check_open()
        async with self._lock:
            session = self._sessions.get(session_id)
            cp = checked.checkpoint
            state = TurnState(
                session_id=session_id,
                session=None if session is None else session.record,
                last_seq=0 if session is None else len(session.log),
                pending=[
                    (e.id, e.items, e.source, e.key, e.origin)
                    for e in (session.pending if session and checked.deliver_queue else ())
                ],
                checkpoint_taken=bool(
                    session and cp and cp.given and any(c[0] == cp.id for c in session.checkpoints)
                ),
                now=time.time(),
            )
            plan = plan_turn_write(state, checked)
            if plan.changed:
                self._apply_turn(session, plan)
                self.write_transactions += 1
            return plan.result()

    def _apply_turn(self, session: _Session | None, plan: TurnPlan) -> None:
        if session is None:
            assert plan.meta is not None  # a new session's meta is always planned
            session = self._sessions[plan.session.id] = _Session(plan.session, plan.meta)
        session.head = plan.session
        if plan.meta is not None:
            session.meta = plan.meta
        session.log.extend((row.role, row.payload, plan.now) for row in plan.rows)
        if plan.delivered:
            first_seq = dict(plan.delivered)
            for entry in session.pending:
                entry.delivered_seq = first_seq.get(entry.id)
            session.pending = [entry for entry in session.pending if entry.delivered_seq is None]
        cp = plan.checkpoint
        if cp is not None:
            session.checkpoints.append((cp.id, cp.step_number, cp.log_seq, cp.state, plan.now))

    async def _enqueue(self, session_id: str, request: ContextRequest) -> int:
        self._check_open()
        async with self._lock:
            session = self._sessions.get(session_id)
            state = EnqueueState(
                session_id=session_id,
                exists=session is not None,
                key_digest=session.keys.get(request.key)
                if session and request.key is not None
                else None,
                queued=sum(e.count for e in session.pending) if session else 0,
                cap=self.max_queued_items,
            )
            plan = plan_enqueue(state, request)
            if plan.insert:
                assert session is not None  # the planner refuses a missing session
                self._insert_entry(session, request)
                self.write_transactions += 1
            return plan.recorded

    def _insert_entry(self, session: _Session, request: ContextRequest) -> None:
        entry = _Entry(
            id=self._next_queue_id,
            items=request.items,
            count=request.count,
            source=request.source,
            key=request.key,
            origin=request.origin,
            created_at=time.time(),
        )
        self._next_queue_id += 1
        session.queue.append(entry)
        session.pending.append(entry)
        if request.key is not None:
            session.keys[request.key] = request.digest

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        """Truncate the log after ``to_seq`` and fix checkpoints and queue (see ``Store``)."""
        async with self._lock:
            session = self._session(session_id)
            log = session.log

            def at(seq: int) -> tuple[str, str] | None:
                return log[seq - 1][:2] if isinstance(seq, int) and 1 <= seq <= len(log) else None

            state = RewindState(
                session_id=session_id,
                last_seq=len(log),
                cut=(at(to_seq), at(to_seq + 1)),
                # Every entry: the planner passes over those whose rows survive.
                entries=[(e.id, e.key, decode(e.origin), e.delivered_seq) for e in session.queue],
                surviving_calls=lambda: tool_call_ids(
                    decode(text) for role, text, _ in log[:to_seq] if role == "assistant"
                ),
                now=time.time(),
            )
            plan = plan_rewind(state, to_seq)
            if plan.changed:
                _apply_rewind(session, plan)
                self.write_transactions += 1
            return plan.result

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        """Make ``new_id`` from ``source_id``'s log and checkpoints up to ``upto_seq``."""
        check_session_id(source_id)
        check_session_id(new_id)
        self._check_open()
        async with self._lock:
            source = self._sessions.get(source_id)
            state = BranchState(
                source_id=source_id,
                source=None if source is None else source.record,
                source_last_seq=0 if source is None else len(source.log),
                target_exists=new_id in self._sessions,
                now=time.time(),
            )
            record = plan_branch(state, new_id, upto_seq=upto_seq, agent_name=agent_name)
            assert source is not None  # the planner refuses a missing source
            made = _Session(record, source.meta)
            made.log = source.log[:upto_seq]  # tuples of immutable values: safe to share
            made.checkpoints = [cp for cp in source.checkpoints if cp[2] <= upto_seq]
            self._sessions[new_id] = made
            self.write_transactions += 1
            return record

    async def close(self) -> None:
        """Mark the store closed; later calls raise RuntimeError. Safe to call twice."""
        self._closed = True


def _apply_rewind(session: _Session, plan: RewindPlan) -> None:
    again, gone = set(plan.redelivered), set(plan.dropped)
    del session.log[plan.to_seq :]
    session.checkpoints = [cp for cp in session.checkpoints if cp[2] <= plan.to_seq]
    for entry in session.queue:
        if entry.id in again:
            entry.delivered_seq = None
    for key in plan.dropped_keys:
        del session.keys[key]
    session.queue = [entry for entry in session.queue if entry.id not in gone]
    session.pending = [entry for entry in session.queue if entry.delivered_seq is None]
    session.head = replace(session.head, updated_at=plan.now)


class MemoryAuthTables:
    """The tables in a ``MemoryStore`` (its writes count in the store's
    ``write_transactions``, as a SQL store's do)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._pending: dict[str, PendingRow] = {}
        self._tokens: dict[str, bytes] = {}

    def _wrote(self) -> None:
        self._store.write_transactions += 1

    async def add_pending(self, row: PendingRow) -> None:
        check_session_id(row.session_id)
        now = time.time()
        kept = {n: r for n, r in self._pending.items() if r.expires_at > now}
        if row.nonce in kept:
            raise sign_in_pending(row.session_id)
        self._pending = {**kept, row.nonce: row}
        self._wrote()

    async def take_pending(self, nonce: str) -> PendingRow | None:
        found = self._pending.pop(nonce, None)
        if found is not None:
            self._wrote()
        return found

    async def get(self, key: str) -> bytes | None:
        return self._tokens.get(key)

    async def set(self, key: str, value: bytes) -> None:
        self._tokens[key] = bytes(value)
        self._wrote()

    async def delete(self, key: str) -> None:
        if self._tokens.pop(key, None) is not None:
            self._wrote()
