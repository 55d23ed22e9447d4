"""What a turn reads and writes in one store call each: :class:`Snapshot` and :class:`TurnWrite`.

A turn of a session touches its store at its boundaries only: it reads a :class:`Snapshot`
once (``Store.read_snapshot``), and writes one :class:`TurnWrite` per boundary
(``Store.write_turn``): the first commit before the model is called (claiming the session,
appending the user's message, committing the context queue as rows), each finished step (its
messages and a checkpoint), and the end (the new status). Each write is one transaction.

This module owns those records. What a write does is decided by ``_plan.plan_turn_write``, the
same on every store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from helix_stream.store._records import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    SessionRecord,
    SessionStatus,
)

__all__ = ["Lease", "NewSession", "Snapshot", "TurnWrite", "TurnWriteResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Everything a turn needs from the store, read in one call.

    Attributes:
        session: The session, or ``None`` when it does not exist yet.
        log: Its whole log, in order.
        checkpoint: Its last checkpoint (the define_state snapshot comes from it), if any.
        pending: Its undelivered queue entries, in id order.

    Example::

        snapshot = await store.read_snapshot("session-1")      # one consistent view
        if snapshot.session is not None:
            print(snapshot.session.status, len(snapshot.log), snapshot.checkpoint)
    """

    session: SessionRecord | None
    log: list[LogRecord] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    pending: list[QueueEntry] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSession:
    """How to create the session of a :class:`TurnWrite` when it does not exist yet.

    Example::

        from helix_stream.store import NewSession, TurnWrite

        result = await store.write_turn(
            "session-2", TurnWrite(create=NewSession(agent_name="support"), status="idle",
                                   messages=[{"role": "user", "content": "Hi"}]))
        assert result.applied
    """

    agent_name: str
    parent_id: str | None = None
    meta: JSON = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """The lease a running turn holds its session with (README, "Reliability notes").

    Attributes:
        token: The turn's own token (a fresh uuid4 hex per turn).
        seconds: How long each write of the turn (its heartbeat too) extends the lease.

    Example::

        from helix_stream.store import Lease, TurnWrite

        result = await store.write_turn("session-1", TurnWrite(
            expect=["idle"], status="running", lease=Lease(token="turn-7", seconds=30.0)))
        print(result.applied)                                  # False: someone else runs it
    """

    token: str
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnWrite:
    """One transaction at a turn boundary; the parts apply in the order of the fields.

    A store checks the write's shape first (an unknown status, ``expect`` as a bare string, a
    payload that is not strict JSON, a message without a ``role``: ``ValueError`` or
    ``TypeError``), then the session, in field order; every refusal writes nothing.

    Attributes:
        create: Create the session (status ``idle``) when it does not exist. Without it, a
            missing session is :class:`~helix_stream.errors.SessionNotFoundError`. An existing
            session is never overwritten: ``create`` is then ignored.
        expect: A compare-and-set: unless the status is one of these, nothing is written and
            the result says ``applied=False``. It is compared after ``create``: a new session
            is ``idle``, so a create whose ``expect`` leaves out ``"idle"`` is not applied, the
            session is not created, and the result's ``session`` is the record it would have
            made. An empty ``expect`` never holds.
        status: The new status (any status may follow any other; setting the current one is
            still a write, which updates ``updated_at``).
        meta: A patch merged into ``meta`` as ``Store.update_session_meta`` does.
        messages: Appended to the log first.
        deliver_queue: Then every undelivered queue entry becomes context rows (one per item,
            in id order: the item, with ``"source"`` from the entry unless the item names its
            own, and ``"origin"``: the entry's origin with ``"queue_id"`` and ``"key"``), and
            the entries are marked delivered at the seq of their first row.
        rows: Then these complete row payloads (hook and memory rows).
        checkpoint: Then a checkpoint at the last seq (its ``log_seq`` is set by the store; an
            empty ``id`` gets a fresh uuid4 hex). An id the session already has refuses the
            whole write with ``ValueError``.
        lease: The turn's lease. With ``status="running"`` the write **claims** it: the session
            then holds ``lease.token`` until ``now + lease.seconds``, and for ``expect`` a
            ``running`` session whose lease has expired counts as ``idle`` (a takeover: of
            two racing claims exactly one applies). Any other write with a lease is
            **fenced**: unless the session holds that token it is refused whole with
            :class:`~helix_stream.errors.SessionLeaseLostError` (another turn took the
            session over); else it extends the lease (a write with nothing but the lease is a
            heartbeat). A write that sets another status than ``running`` releases the lease;
            ``running`` set without a lease holds the session with no expiry.

    A write that changes nothing (no new session, rows, checkpoint or status, and a meta patch
    that leaves ``meta`` as it is) writes nothing and is not counted in ``write_transactions``.
    A heartbeat changes the lease only (not ``updated_at``).

    Example::

        from helix_stream.store import TurnWrite

        result = await store.write_turn("session-1", TurnWrite(
            messages=[{"role": "assistant", "content": "Done."}], status="idle"))
        print(result.applied, [r.seq for r in result.records])
    """

    create: NewSession | None = None
    expect: Sequence[SessionStatus] | None = None
    status: SessionStatus | None = None
    meta: Mapping[str, Any] | None = None
    messages: Sequence[JSON] = ()
    deliver_queue: bool = False
    rows: Sequence[JSON] = ()
    checkpoint: Checkpoint | None = None
    lease: Lease | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnWriteResult:
    """What a :class:`TurnWrite` did.

    Attributes:
        applied: ``False`` when ``expect`` did not hold: nothing was written.
        session: The session record after the write; when not applied, before it (or, for a
            create that was not applied, the record it would have made).
        records: The appended log records: messages, then queue rows, then ``rows``.

    Example::

        from helix_stream.store import TurnWrite

        result = await store.write_turn("session-1", TurnWrite(expect=["idle"], status="running"))
        if not result.applied:                                 # nothing written
            print("busy:", result.session.status)
    """

    applied: bool
    session: SessionRecord
    records: list[LogRecord] = field(default_factory=list)
