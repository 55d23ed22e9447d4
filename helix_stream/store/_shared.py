"""What every store shares, so that they encode, compare and refuse identically.

Payload JSON (:func:`encode`, :func:`decode`), the request-key fingerprint
(:func:`items_digest`), the committed row (:func:`context_row`), the checkpoint id rule
(:func:`checkpoint_id`), the meta merge (:func:`merge_meta`), the argument checks, the messages
of every refusal, and the reading of stored queue and checkpoint rows. The decisions that use
them are the planners of ``_plan`` and ``_plan_history``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from helix_stream._limits import show, text_problem
from helix_stream.errors import (
    ContextKeyConflictError,
    ContextValidationError,
    SessionLeaseLostError,
    SessionNotFoundError,
    StateError,
)
from helix_stream.store._records import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    SessionRecord,
    SessionStatus,
)

__all__ = [
    "LEASE_RENEW_SECONDS",
    "LEASE_SECONDS",
    "SESSION_COLUMNS",
    "STEER_SOURCE",
    "check_conflict_mode",
    "check_expect",
    "check_lease_options",
    "check_queue_cap",
    "check_seq",
    "check_status",
    "checkpoint_id",
    "checkpoints_from_rows",
    "context_row",
    "decode",
    "duplicate_checkpoint",
    "encode",
    "items_digest",
    "key_conflict",
    "lease_lost",
    "log_from_rows",
    "merge_meta",
    "message_role",
    "queue_entries_from_rows",
    "queue_full",
    "queue_row",
    "session_exists",
    "session_from_row",
    "session_not_found",
]

_STATUSES: frozenset[str] = frozenset(get_args(SessionStatus))


# -- payloads ------------------------------------------------------------------------------


def encode(value: object) -> str:
    """Compact JSON text of a payload; raises TypeError/ValueError if it is not strict JSON.

    ``allow_nan=False`` because NaN/Infinity are not JSON: a provider or Postgres ``jsonb``
    would refuse them later, far from the write that let them in. A lone surrogate is refused
    for the same reason: it has no UTF-8 form, so SQLite and PostgreSQL could not store it and
    MemoryStore would keep what the others refuse. (NUL is fine: JSON escapes it.)
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    problem = text_problem(text)
    if problem is not None:
        raise ValueError(f"a payload string {problem}; it cannot be stored as UTF-8")
    return text


def decode(text: str) -> Any:
    """The value of JSON text written by :func:`encode` (a fresh object on every call)."""
    return json.loads(text)


def items_digest(items: Sequence[JSON]) -> str:
    """The request-key fingerprint: SHA-256 of the items' canonical JSON.

    ``sort_keys`` makes two dicts with the same fields the same request whatever their key
    order; the list order still counts (same items in the same order = same request).
    """
    canonical = json.dumps(
        list(items), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


STEER_SOURCE = "steer"
"""The source of a queue entry that holds a user's message sent while a turn ran (a steered
message): delivered like the queue's other entries, but as the ``user`` message it is."""


def queue_row(
    item: JSON, *, source: str, origin: JSON, queue_id: int, key: str | None
) -> tuple[str, JSON]:
    """The log role and payload committed for one queued item: a steered message is appended
    as it was sent (a ``user`` message: the user wrote it), everything else as a context row."""
    if source == STEER_SOURCE:
        return "user", item
    return "context", context_row(item, source=source, origin=origin, queue_id=queue_id, key=key)


def context_row(item: JSON, *, source: str, origin: JSON, queue_id: int, key: str | None) -> JSON:
    """The row payload committed for one queued item (see ``TurnWrite.deliver_queue``)."""
    # The item's own source wins (the executor has already forced "tool" on a tool's items).
    return {
        **item,
        "source": item.get("source", source),
        "origin": {**origin, "queue_id": queue_id, "key": key},
    }


def message_role(message: Mapping[str, Any]) -> str:
    """The log role of a message: its ``"role"`` field, which must be a string."""
    role = message.get("role")
    if not isinstance(role, str):
        raise ValueError(f"a message needs a string 'role' field; got {role!r}")
    return role


def checkpoint_id(given: str) -> str:
    """Keep a caller's checkpoint id; make a uuid4 hex one when it is empty."""
    return given or uuid.uuid4().hex


def merge_meta(meta: JSON, patch: Mapping[str, Any]) -> tuple[JSON, bool]:
    """``meta`` with ``patch`` merged in (a ``None`` value removes its key), and whether the
    JSON changed. Raises TypeError/ValueError if the result is not strict JSON."""
    merged = dict(meta)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    # Compared as text: ``1 == 1.0 == True`` in Python, but they are different JSON.
    text = encode(merged)
    return decode(text), text != encode(meta)


# -- argument checks -----------------------------------------------------------------------


def check_status(status: str) -> None:
    if status not in _STATUSES:
        raise ValueError(f"unknown session status {status!r}; use one of {sorted(_STATUSES)}")


def check_expect(expect: Sequence[str] | None) -> tuple[str, ...] | None:
    """Validate an ``expect`` (of ``TurnWrite`` or ``set_status``); a bare string would
    silently match by substring."""
    if expect is None:
        return None
    if isinstance(expect, str):
        raise TypeError(f"expect must be a list of statuses, e.g. [{expect!r}], not a string")
    for status in expect:
        check_status(status)
    return tuple(expect)


def check_queue_cap(value: int) -> int:
    """``max_queued_items`` of a store: a positive int."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_queued_items must be a positive int, not {value!r}")
    return value


LEASE_SECONDS = 10.0
"""How long a running turn's lease lasts unless renewed: a session whose process died is free
within this long after its last renewal (so within 10 s of the death, with the default renewal
every 3 s)."""
LEASE_RENEW_SECONDS = 3.0
"""How often a running turn renews its lease (one small write, from the turn's own task)."""


def check_lease_options(lease_seconds: float, lease_renew_seconds: float) -> tuple[float, float]:
    """A store's ``lease_seconds`` and ``lease_renew_seconds``: positive, renewing well inside
    the lease (at most half of it, so one late renewal does not lose it)."""
    options = (("lease_seconds", lease_seconds), ("lease_renew_seconds", lease_renew_seconds))
    for name, value in options:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    if lease_renew_seconds > lease_seconds / 2:
        raise ValueError(
            f"lease_renew_seconds={lease_renew_seconds!r} must be at most half of "
            f"lease_seconds={lease_seconds!r}, so that one late renewal does not lose the lease"
        )
    return float(lease_seconds), float(lease_renew_seconds)


def check_conflict_mode(mode: str) -> None:
    if mode not in ("raise", "ignore"):
        raise ValueError(f"on_key_conflict must be 'raise' or 'ignore', not {mode!r}")


def check_seq(session_id: str, name: str, seq: int, last: int) -> None:
    """``seq`` must name a position of the log: 0 (before the first record) to ``last``."""
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= last:
        raise ValueError(
            f"{name}={seq!r} is not a position of session {session_id!r}'s log, whose seqs "
            f"run 1..{last} (0 = before the first); nothing was written."
        )


# -- refusals ------------------------------------------------------------------------------


def session_not_found(session_id: str) -> SessionNotFoundError:
    return SessionNotFoundError(
        f"No session {show(session_id)}; nothing was written. Create it first "
        "(executor.run, or a write_turn with create=) or check the id."
    )


def lease_lost(session_id: str) -> SessionLeaseLostError:
    return SessionLeaseLostError(
        f"Session {show(session_id)} is no longer this turn's: its lease expired and another "
        "turn took the session over; nothing was written."
    )


def session_exists(session_id: str) -> StateError:
    return StateError(
        f"Session {show(session_id)} already exists; nothing was written. Branch into a new "
        "session id."
    )


def sign_in_pending(session_id: str) -> StateError:
    return StateError(
        f"A sign-in with this state nonce is already pending (session {show(session_id)}); "
        "nothing was written. Each sign-in needs a fresh nonce."
    )


def key_conflict(session_id: str, key: str) -> ContextKeyConflictError:
    return ContextKeyConflictError(
        f"Context key {show(key)} was already used in session {show(session_id)} with other "
        "items; nothing was written. Retry with exactly the same items, or use a new key for "
        "a new request."
    )


def queue_full(session_id: str, queued: int, adding: int, cap: int) -> ContextValidationError:
    return ContextValidationError(
        f"Session {show(session_id)} already has {queued} context items waiting for its next "
        f"model call; {adding} more would pass the limit of {cap} queued items. Nothing was "
        "queued. Wait for the session's next model call to deliver them, or add fewer."
    )


def duplicate_checkpoint(session_id: str, cp_id: str) -> ValueError:
    return ValueError(
        f"checkpoint {cp_id!r} already exists in session {session_id!r}; nothing was written. "
        "Pass an empty id to have the store make a fresh one."
    )


SESSION_COLUMNS = (
    "id, agent_name, status, parent_id, created_at, updated_at, meta, lease_token, lease_expires"
)
"""The columns :func:`session_from_row` reads, in its order (both SQL stores)."""


def session_from_row(row: Sequence[Any], read_at: float | None = None) -> SessionRecord:
    """The record of a SQL row of :data:`SESSION_COLUMNS` (meta as JSON text) — the SQL
    stores' shared reading; ``read_at``: the store's clock, when it is not the process's."""
    sid, agent_name, status, parent_id, created_at, updated_at, meta, token, expires = row
    return SessionRecord(
        id=sid,
        agent_name=agent_name,
        status=status,
        parent_id=parent_id,
        created_at=created_at,
        updated_at=updated_at,
        meta=decode(meta),
        lease_token=token,
        lease_expires=expires,
        read_at=read_at,
    )


def log_from_rows(rows: Iterable[Sequence[Any]]) -> list[LogRecord]:
    """Log records from SQL rows ``(seq, role, payload, created_at)``."""
    return [
        LogRecord(seq=seq, role=role, payload=decode(payload), created_at=at)
        for seq, role, payload, at in rows
    ]


def queue_entries_from_rows(rows: Iterable[Sequence[Any]]) -> list[QueueEntry]:
    """Queue entries from SQL rows ``(id, items, source, key, origin, created_at, delivered)``
    (items and origin as JSON text) — the SQL stores' shared reading."""
    return [
        QueueEntry(
            id=qid,
            items=decode(items),
            source=source,
            key=key,
            origin=decode(origin),
            created_at=at,
            delivered_seq=delivered,
        )
        for qid, items, source, key, origin, at, delivered in rows
    ]


def checkpoints_from_rows(session_id: str, rows: Iterable[Sequence[Any]]) -> list[Checkpoint]:
    """Checkpoints from SQL rows ``(id, step_number, log_seq, state, created_at)``."""
    return [
        Checkpoint(
            id=cp_id,
            session_id=session_id,
            step_number=step,
            log_seq=log_seq,
            state=decode(state),
            created_at=at,
        )
        for cp_id, step, log_seq, state, at in rows
    ]
