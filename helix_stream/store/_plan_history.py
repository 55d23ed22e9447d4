"""The planners of a session's history edits: ``plan_rewind`` and ``plan_branch``.

Like the planners of ``_plan`` (whose docstring draws the pattern), they are pure: each store
reads the state under its lock, gets a plan or a refusal here, and applies the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from helix_stream.store._records import JSON, RewindResult, SessionRecord
from helix_stream.store._shared import check_seq, decode, session_exists, session_not_found

__all__ = [
    "BranchState",
    "RewindPlan",
    "RewindState",
    "plan_branch",
    "plan_rewind",
    "tool_call_ids",
]

Row = tuple[str, str]  # (role, payload JSON), as stored


def _queue_id(row: Row | None) -> object:
    if row is None or row[0] != "context":
        return None
    origin = decode(row[1]).get("origin")
    return origin.get("queue_id") if isinstance(origin, dict) else None


def _check_cut(session_id: str, to_seq: int, row_at: Row | None, row_after: Row | None) -> None:
    """Refuse a rewind that would keep some of one queue entry's rows and cut the others.

    ``row_at`` and ``row_after`` are the stored records at ``to_seq`` (``None`` when it is 0)
    and ``to_seq + 1``. An entry is delivered again only as a whole, so a cut inside its rows
    would either lose or double the cut items.
    """
    queue_id = _queue_id(row_at)
    if queue_id is not None and queue_id == _queue_id(row_after):
        raise ValueError(
            f"cannot rewind session {session_id!r} to seq {to_seq}: it falls inside the rows "
            f"of queue entry {queue_id}, which one context pass committed together; nothing "
            "was written. Rewind to a checkpoint's log_seq, or to before that pass."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindState:
    """What a rewind depends on.

    Attributes:
        session_id: The session.
        last_seq: The seq of its last log record.
        cut: The stored records at ``to_seq`` and ``to_seq + 1`` (``None`` where there is none).
        entries: The queue entries a rewind can touch — undelivered, or delivered after
            ``to_seq`` — as ``(id, key, origin, delivered_seq)``, in id order (others are
            passed over).
        surviving_calls: The tool call ids of the assistant messages up to ``to_seq``; asked
            only when a tool's entry needs it.
        now: The time of the rewind.
    """

    session_id: str
    last_seq: int
    cut: tuple[Row | None, Row | None] = (None, None)
    entries: Sequence[tuple[int, str | None, JSON, int | None]] = ()
    surviving_calls: Callable[[], set[str]] = set
    now: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RewindPlan:
    """What a rewind to ``to_seq`` does: delete the log and checkpoints after it, make the
    ``redelivered`` entries undelivered, delete the ``dropped`` ones with their keys
    (``dropped_keys``), and touch the session's ``updated_at`` — unless ``changed`` is False."""

    to_seq: int
    changed: bool
    result: RewindResult
    redelivered: tuple[int, ...] = ()
    dropped: tuple[int, ...] = ()
    dropped_keys: tuple[str, ...] = ()
    now: float = 0.0


def tool_call_ids(assistant_messages: Iterable[JSON]) -> set[str]:
    """The ids in the messages' ``tool_calls[*].id`` (the calls a log still holds)."""
    ids: set[str] = set()
    for message in assistant_messages:
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                ids.add(call["id"])
    return ids


def plan_rewind(state: RewindState, to_seq: int) -> RewindPlan:
    """Decide a rewind to ``to_seq`` (README, "Durable sessions"; see ``Store.rewind``).

    An entry whose rows are cut is delivered again, once; but what a tool queued goes with that
    tool's call, so a tool's entry whose call is no longer in the log is dropped, delivered or
    not, with its key.

    Raises:
        ValueError: ``to_seq`` is not a position of the log, or falls inside one entry's rows.
    """
    check_seq(state.session_id, "to_seq", to_seq, state.last_seq)
    if to_seq == state.last_seq:
        empty = RewindResult(removed_records=0, redelivered_entries=[], dropped_entries=[])
        return RewindPlan(to_seq=to_seq, changed=False, result=empty)
    _check_cut(state.session_id, to_seq, *state.cut)
    redelivered: list[int] = []
    dropped: list[int] = []
    dropped_keys: list[str] = []
    calls: set[str] | None = None
    for queue_id, key, origin, delivered_seq in state.entries:
        if delivered_seq is not None and delivered_seq <= to_seq:
            continue  # its rows survive
        if origin.get("type") == "steer":
            # A steered message cut away goes like any user message: it is not sent again.
            dropped.append(queue_id)
            if key is not None:
                dropped_keys.append(key)
            continue
        if origin.get("type") == "tool":
            calls = state.surviving_calls() if calls is None else calls
            if origin.get("tool_call_id") not in calls:
                dropped.append(queue_id)
                if key is not None:
                    dropped_keys.append(key)
                continue
        if delivered_seq is not None:
            redelivered.append(queue_id)
    result = RewindResult(
        removed_records=state.last_seq - to_seq,
        redelivered_entries=redelivered,
        dropped_entries=dropped,
    )
    return RewindPlan(
        to_seq=to_seq,
        changed=True,
        result=result,
        redelivered=tuple(redelivered),
        dropped=tuple(dropped),
        dropped_keys=tuple(dropped_keys),
        now=state.now,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchState:
    """What a branch depends on: the source (``None``: no such session), its last seq, whether
    the new id is taken, and the time."""

    source_id: str
    source: SessionRecord | None
    source_last_seq: int = 0
    target_exists: bool = False
    now: float


def plan_branch(
    state: BranchState, new_id: str, *, upto_seq: int, agent_name: str | None
) -> SessionRecord:
    """The new session of a branch (see ``Store.branch``); the backend copies the source's log
    and checkpoints up to ``upto_seq`` into it.

    Raises:
        SessionNotFoundError: no source. StateError: ``new_id`` exists. ValueError: a bad seq.
    """
    if state.source is None:
        raise session_not_found(state.source_id)
    if state.target_exists:
        raise session_exists(new_id)
    check_seq(state.source_id, "upto_seq", upto_seq, state.source_last_seq)
    return SessionRecord(
        id=new_id,
        agent_name=state.source.agent_name if agent_name is None else agent_name,
        status="idle",
        parent_id=state.source_id,
        created_at=state.now,
        updated_at=state.now,
        meta=state.source.meta,
    )
