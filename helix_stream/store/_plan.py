"""The store's decisions, each written once: what a write changes, or why it is refused.

Every store method that writes works the same way on every backend::

    check_*(arguments)  ->  refused before the store is touched: a bad status, key or payload
         |
    read the state      ->  the backend's own reads, inside its transaction, under its lock
         |
    plan_*(state, ...)  ->  refused (no session, key conflict, full queue, taken checkpoint id,
         |                  bad seq), or a frozen plan: every row with its seq, the queue
         |                  entries it delivers, the checkpoint, the session after the write
    apply the plan      ->  the backend's few primitives; a plan that changes nothing writes
                            nothing

The planners are pure (no I/O; the state carries the clock), so MemoryStore, SQLiteStore and
PostgresStore decide identically and refuse in one order with the texts of ``_shared``. A rule
that a write must honour — a lease that fences a running turn's writes, say — is one more
check here, in front of every backend at once.

The lease (``TurnWrite.lease``) is decided here too: a claim's takeover of an expired lease,
the fencing of a turn's later writes by its token, the renewal and the release.

This module plans the writes of a turn and of ``enqueue_context``; ``_plan_history`` plans a
rewind and a branch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from helix_stream._limits import check_key
from helix_stream.store._records import JSON, LogRecord, SessionRecord, SessionStatus
from helix_stream.store._shared import (
    check_conflict_mode,
    check_expect,
    check_status,
    checkpoint_id,
    decode,
    duplicate_checkpoint,
    encode,
    items_digest,
    key_conflict,
    lease_lost,
    merge_meta,
    message_role,
    queue_full,
    queue_row,
    session_not_found,
)
from helix_stream.store._turns import Lease, NewSession, TurnWrite, TurnWriteResult

__all__ = [
    "CheckedWrite",
    "ContextRequest",
    "EnqueuePlan",
    "EnqueueState",
    "NewCheckpoint",
    "PendingRow",
    "PlannedRow",
    "TurnPlan",
    "TurnState",
    "check_enqueue",
    "check_turn_write",
    "plan_enqueue",
    "plan_turn_write",
]

PendingRow = tuple[int, str, str, "str | None", str]
"""An undelivered queue entry as stored: ``(id, items JSON, source, key, origin JSON)``."""


# -- write_turn ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NewCheckpoint:
    """A checkpoint to insert: its id, its step, its log position and its state (JSON text).

    ``given`` says the caller named the id (the store must check that it is free); otherwise it
    is a fresh uuid4. ``log_seq`` is 0 until :func:`plan_turn_write` sets it.
    """

    id: str
    given: bool
    step_number: int
    state: str
    log_seq: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckedWrite:
    """A :class:`~helix_stream.store.TurnWrite` whose arguments and payloads were checked and
    encoded (:func:`check_turn_write`): nothing left in it can be refused for its shape."""

    create: NewSession | None
    create_meta: str
    expect: tuple[str, ...] | None
    status: SessionStatus | None
    meta: Mapping[str, Any] | None
    messages: tuple[tuple[str, str], ...]  # (role, payload JSON)
    deliver_queue: bool
    rows: tuple[str, ...]  # payload JSON
    checkpoint: NewCheckpoint | None
    lease: Lease | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnState:
    """What a turn write depends on, read by the backend under its lock.

    Attributes:
        session_id: The session written to.
        session: Its record, or ``None`` when it does not exist before this write.
        last_seq: The seq of its last log record (0 for an empty log, or no session).
        pending: Its undelivered queue entries in id order (read when the write delivers them).
        checkpoint_taken: The write's given checkpoint id is already one of the session's.
        now: The time the write happens at, by the store's clock (PostgreSQL: the database's
            ``now()``, read with the lock), which every lease rule judges by.
    """

    session_id: str
    session: SessionRecord | None
    last_seq: int = 0
    pending: Sequence[PendingRow] = ()
    checkpoint_taken: bool = False
    now: float


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedRow:
    """One log record to insert."""

    seq: int
    role: str
    payload: str  # JSON


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPlan:
    """What one turn write does.

    Attributes:
        applied: ``False`` when ``expect`` did not hold: nothing is written.
        changed: Whether there is anything to write (else the backend writes nothing).
        create: The session row is to be inserted (it did not exist).
        session: The session after the write (before it, when not applied).
        meta: ``session.meta`` as JSON text when the write creates the session or changes its
            meta; ``None`` when it keeps the stored one.
        rows: The log records to insert, in seq order: messages, queue rows, then extra rows.
        delivered: ``(queue id, seq of its first row)`` of every entry the rows deliver.
        checkpoint: The checkpoint to insert, at the last seq.
        last_seq: The session's last seq after the write.
        now: The time of the write (every row's ``created_at``).
    """

    applied: bool
    changed: bool
    create: bool
    session: SessionRecord
    meta: str | None
    rows: tuple[PlannedRow, ...] = ()
    delivered: tuple[tuple[int, int], ...] = ()
    checkpoint: NewCheckpoint | None = None
    last_seq: int = 0
    now: float = 0.0

    def result(self) -> TurnWriteResult:
        """The caller's answer (records decoded afresh: the caller may change them freely)."""
        records = [
            LogRecord(seq=r.seq, role=r.role, payload=decode(r.payload), created_at=self.now)
            for r in self.rows
        ]
        return TurnWriteResult(applied=self.applied, session=self.session, records=records)


def check_turn_write(write: TurnWrite) -> CheckedWrite:
    """Check and encode a write before a store touches anything.

    Refusals, in the order of the write's fields: a ``create.meta`` that is not strict JSON,
    ``expect`` given as a bare string or naming an unknown status, an unknown ``status``, a
    ``meta`` patch, message or row that is not strict JSON (a message without a string
    ``role`` among them), a checkpoint state that is not strict JSON.

    Raises:
        ValueError | TypeError: what is wrong, before anything is read or written.
    """
    create_meta = encode(dict(write.create.meta)) if write.create is not None else "{}"
    expect = check_expect(write.expect)
    if write.status is not None:
        check_status(write.status)
    if write.meta:
        encode(dict(write.meta))  # a patch of JSON values merges into JSON
    messages = tuple((message_role(m), encode(m)) for m in write.messages)
    rows = tuple(encode(row) for row in write.rows)
    checkpoint = None
    if write.checkpoint is not None:
        given = write.checkpoint
        checkpoint = NewCheckpoint(
            id=checkpoint_id(given.id),
            given=bool(given.id),
            step_number=given.step_number,
            state=encode(given.state),
        )
    return CheckedWrite(
        create=write.create,
        create_meta=create_meta,
        expect=expect,
        status=write.status,
        meta=write.meta or None,
        messages=messages,
        deliver_queue=write.deliver_queue,
        rows=rows,
        checkpoint=checkpoint,
        lease=_check_lease(write.lease),
    )


def _check_lease(lease: Lease | None) -> Lease | None:
    if lease is None:
        return None
    if not isinstance(lease.token, str) or not lease.token:
        raise ValueError(f"a lease token must be a non-empty string, not {lease.token!r}")
    seconds = lease.seconds
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"a lease's seconds must be a positive number, not {seconds!r}")
    return lease


def _lease_after(
    session: SessionRecord, write: CheckedWrite, now: float
) -> tuple[str | None, float | None]:
    """The lease the session holds after the write (token, expiry); refuses a fenced write
    whose token the session no longer holds."""
    lease, status = write.lease, write.status
    claims = lease is not None and status == "running"  # ``expect`` decided whether it may
    if lease is not None and not claims and session.lease_token != lease.token:
        raise lease_lost(session.id)  # a late write of a turn that was taken over
    if status is not None and status != "running":
        return None, None  # the turn is over: released
    if lease is None:
        if status == "running":
            return None, None  # set by hand: held, with no expiry
        return session.lease_token, session.lease_expires
    return lease.token, now + lease.seconds


def _expect_holds(session: SessionRecord, write: CheckedWrite, now: float) -> bool:
    """``expect`` holds; for a claim, a running session whose lease expired counts as idle."""
    if write.expect is None:
        return True
    status = session.status
    if write.lease is not None and write.status == "running" and session.lease_expired(now):
        status = "idle"
    return status in write.expect


def _queue_rows(
    pending: Sequence[PendingRow], seq: int
) -> tuple[list[tuple[str, str]], list[tuple[int, int]]]:
    """The (role, payload) of every queued item after ``seq``, and (queue id, seq of its first
    row)."""
    texts: list[tuple[str, str]] = []
    delivered: list[tuple[int, int]] = []
    for queue_id, items, source, key, origin_text in pending:
        delivered.append((queue_id, seq + len(texts) + 1))
        origin = decode(origin_text)
        for item in decode(items):
            role, payload = queue_row(
                item, source=source, origin=origin, queue_id=queue_id, key=key
            )
            texts.append((role, encode(payload)))
    return texts, delivered


def plan_turn_write(state: TurnState, write: CheckedWrite) -> TurnPlan:
    """Decide one turn write; its parts apply in the order of :class:`TurnWrite`'s fields.

    ``create`` makes an ``idle`` session when there is none; ``expect`` is then compared with
    that status, so a create whose ``expect`` leaves out ``"idle"`` is not applied and the
    session is not created (``session`` is the record it would have made). A write that names a
    checkpoint id the session has is refused whole.

    Raises:
        SessionNotFoundError: no session and no ``create``.
        ValueError: the checkpoint id is taken.
    """
    session, now = state.session, state.now
    if session is None:
        if write.create is None:
            raise session_not_found(state.session_id)
        session = SessionRecord(
            id=state.session_id,
            agent_name=write.create.agent_name,
            parent_id=write.create.parent_id,
            created_at=now,
            updated_at=now,
            meta=decode(write.create_meta),
        )
    if not _expect_holds(session, write, now):
        return TurnPlan(applied=False, changed=False, create=False, session=session, meta=None)
    lease_token, lease_expires = _lease_after(session, write, now)
    meta, meta_changed = session.meta, False
    if write.meta is not None:
        meta, meta_changed = merge_meta(session.meta, write.meta)
    texts = list(write.messages)
    delivered: list[tuple[int, int]] = []
    if write.deliver_queue:
        queued, delivered = _queue_rows(state.pending, state.last_seq + len(texts))
        texts.extend(queued)
    texts.extend(("context", text) for text in write.rows)
    rows = tuple(
        PlannedRow(seq=state.last_seq + i, role=role, payload=text)
        for i, (role, text) in enumerate(texts, start=1)
    )
    last_seq = state.last_seq + len(rows)
    checkpoint = write.checkpoint
    if checkpoint is not None:
        if state.checkpoint_taken:
            raise duplicate_checkpoint(state.session_id, checkpoint.id)
        checkpoint = replace(checkpoint, log_seq=last_seq)
    created = state.session is None
    changed = created or bool(rows) or checkpoint is not None
    changed = changed or write.status is not None or meta_changed
    leased = (lease_token, lease_expires) != (session.lease_token, session.lease_expires)
    return TurnPlan(
        applied=True,
        changed=changed or leased,
        create=created,
        session=replace(
            session,
            status=write.status or session.status,
            updated_at=now if changed else session.updated_at,
            meta=meta,
            lease_token=lease_token,
            lease_expires=lease_expires,
            read_at=now,
        ),
        meta=encode(meta) if created or meta_changed else None,
        rows=rows,
        delivered=tuple(delivered),
        checkpoint=checkpoint,
        last_seq=last_seq,
        now=now,
    )


# -- enqueue_context -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRequest:
    """The checked arguments of one ``enqueue_context`` call (:func:`check_enqueue`)."""

    items: str  # JSON of the list
    count: int
    source: str
    origin: str  # JSON
    key: str | None
    digest: str  # the items' fingerprint; "" without a key
    on_key_conflict: Literal["raise", "ignore"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EnqueueState:
    """What an enqueue depends on: whether the session exists, the fingerprint its key was first
    used with (``None``: unused, or no key), how many items its queue holds, and the cap."""

    session_id: str
    exists: bool
    key_digest: str | None
    queued: int
    cap: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EnqueuePlan:
    """How many items the call records (its answer), and whether to insert its entry (and, with
    a key, the key's row)."""

    recorded: int
    insert: bool


def check_enqueue(
    items: Sequence[JSON],
    *,
    source: str,
    origin: Mapping[str, Any],
    key: str | None,
    on_key_conflict: Literal["raise", "ignore"],
) -> ContextRequest:
    """Check and encode an ``enqueue_context`` call before a store touches anything.

    Raises:
        InvalidRequestError: a bad key.
        ValueError | TypeError: an unknown conflict mode; items or origin not strict JSON.
    """
    check_key(key)
    check_conflict_mode(on_key_conflict)
    return ContextRequest(
        items=encode(list(items)),
        count=len(items),
        source=source,
        origin=encode(dict(origin)),
        key=key,
        digest=items_digest(items) if key is not None else "",
        on_key_conflict=on_key_conflict,
    )


def plan_enqueue(state: EnqueueState, request: ContextRequest) -> EnqueuePlan:
    """Decide one enqueue (see ``Store.enqueue_context``).

    In this order: no session → not found; a key used before → 0 with the same items (or
    ``"ignore"``), else a conflict; no items → 0 (and no key kept); more than the cap would
    then be queued → refused; else the entry is inserted.

    Raises:
        SessionNotFoundError | ContextKeyConflictError | ContextValidationError
    """
    if not state.exists:
        raise session_not_found(state.session_id)
    if request.key is not None and state.key_digest is not None:
        if state.key_digest == request.digest or request.on_key_conflict == "ignore":
            return EnqueuePlan(recorded=0, insert=False)
        raise key_conflict(state.session_id, request.key)
    if not request.count:
        return EnqueuePlan(recorded=0, insert=False)
    if state.queued + request.count > state.cap:
        raise queue_full(state.session_id, state.queued, request.count, state.cap)
    return EnqueuePlan(recorded=request.count, insert=True)
