"""What a turn reads and writes in one store call each: :class:`Snapshot` and :class:`TurnWrite`.

A turn of a session touches its store at its boundaries only: it reads a :class:`Snapshot`
once (``Store.read_snapshot``), and writes one :class:`TurnWrite` per boundary
(``Store.write_turn``): the first commit before the model is called (claiming the session,
appending the user's message, committing the context queue as rows), each finished step (its
messages and a checkpoint), and the end (the new status). Each write is one transaction.

This module owns those two records and :func:`check_turn_write`, the argument checks every
store applies the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from helix_stream.store._protocol import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    SessionRecord,
    SessionStatus,
)
from helix_stream.store._shared import check_expect, check_status, message_role

__all__ = ["NewSession", "Snapshot", "TurnWrite", "TurnWriteResult", "check_turn_write"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Everything a turn needs from the store, read in one call.

    Attributes:
        session: The session, or ``None`` when it does not exist yet.
        log: Its whole log, in order.
        checkpoint: Its last checkpoint (the define_state snapshot comes from it), if any.
        pending: Its undelivered queue entries, in id order.
    """

    session: SessionRecord | None
    log: list[LogRecord] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    pending: list[QueueEntry] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class NewSession:
    """How to create the session of a :class:`TurnWrite` when it does not exist yet."""

    agent_name: str
    parent_id: str | None = None
    meta: JSON = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnWrite:
    """One transaction at a turn boundary; the parts apply in the order of the fields.

    Attributes:
        create: Create the session (status ``idle``) when it does not exist. Without it, a
            missing session is :class:`~helix_stream.errors.SessionNotFoundError`.
        expect: A compare-and-set: unless the status is one of these, nothing is written and
            the result says ``applied=False``.
        status: The new status.
        meta: A patch merged into ``meta`` as ``Store.update_session_meta`` does.
        messages: Appended to the log first.
        deliver_queue: Then every undelivered queue entry becomes context rows, as
            ``Store.commit_context`` does.
        rows: Then these complete row payloads (hook and memory rows).
        checkpoint: Then a checkpoint at the last seq (its ``log_seq`` is set by the store).
    """

    create: NewSession | None = None
    expect: Sequence[SessionStatus] | None = None
    status: SessionStatus | None = None
    meta: Mapping[str, Any] | None = None
    messages: Sequence[JSON] = ()
    deliver_queue: bool = False
    rows: Sequence[JSON] = ()
    checkpoint: Checkpoint | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnWriteResult:
    """What a :class:`TurnWrite` did.

    Attributes:
        applied: ``False`` when ``expect`` did not hold: nothing was written.
        session: The session record after the write (before it, when not applied).
        records: The appended log records: messages, then queue rows, then ``rows``.
    """

    applied: bool
    session: SessionRecord
    records: list[LogRecord] = field(default_factory=list)


def check_turn_write(write: TurnWrite) -> tuple[list[tuple[str, JSON]], tuple[str, ...] | None]:
    """Validate a write before a store touches anything; return the messages' roles and the
    expected statuses.

    Raises:
        ValueError | TypeError: a status is unknown, ``expect`` is a bare string, or a
            message has no string ``role``.
    """
    if write.status is not None:
        check_status(write.status)
    roles = [(message_role(m), m) for m in write.messages]
    return roles, check_expect(write.expect)
