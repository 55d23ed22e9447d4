"""Steering: a user's message sent while a turn runs reaches that turn at its next step.

This module owns the rule, end to end (docs/guides/serving.md, "Steering"):

* :func:`steer` stores the message at once, durably, in the session's context queue (source
  ``"steer"``; idempotent by the client's message id, which is the entry's key), the same
  queue ``add_context`` uses: the running turn's next context commit delivers it, in the
  same transaction as its other rows, wherever that turn runs (any replica on a shared
  store), exactly once. The store appends it as the ``user`` message it is
  (``store._shared.queue_row``), marked ``_steered`` (``UserRecord.steered``), so the
  prompt's earlier bytes never change;
* :func:`steering_chunks`: each delivered message is a
  :class:`~helix_stream.chunks.SteeringMessage` chunk of the turn's stream (the UI stream's
  ``steering-message`` part, for ``ai@7`` clients);
* :func:`follow_ups`: a turn whose last step had no next one (it was giving its final answer)
  cannot take the message in; before the message was queued, :func:`steer` set the session's
  ``_steered`` flag, which the turn's final write reads back (``TurnLog.follow_up``). The
  turn then checks the queue once and, while steered messages wait, runs a new turn right
  after (no input: its first commit delivers them) in the same stream, under the same UI
  message. A turn that finds none clears the flag.

A turn that ends another way (stopped, failed, paused for an answer) leaves the message
queued: the session's next turn takes it in with its first commit.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any

from ..chunks import Chunk, ErrorChunk, Finish, Start, SteeringMessage
from ..errors import SessionNotFoundError
from ..store import LogRecord, SessionRecord, Snapshot, Store
from ..store._shared import STEER_SOURCE
from ._lease import FencedWriter
from ._records import UserRecord
from ._request import TurnRequest

__all__ = [
    "FOLLOW_UP",
    "STEER_FLAG",
    "STEER_ORIGIN",
    "FollowUp",
    "Steered",
    "follow_ups",
    "has_steered",
    "steer",
    "steering_chunks",
    "without_steered",
]

logger = logging.getLogger("helix_stream.session")

STEER_FLAG = "_steered"
"""The session meta key :func:`steer` sets: a message was steered, and the turn that ends
next looks for it in the queue (and clears the flag when nothing waits)."""

STEER_ORIGIN = {"type": "steer"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Steered:
    """What :meth:`Executor.steer` did.

    Example::

        steered = await executor.steer("chat-1", "Use Paris, Texas instead.")
        if not steered.running:  # no turn runs: run one to answer it
            run = executor.run(agent, "chat-1")

    Attributes:
        recorded: The message was stored now (``False``: its message id was seen before,
            and nothing was stored again).
        running: A turn of the session was running after the message was stored: it takes
            the message in at its next step, or answers it in a new turn right after.
            ``False``: none runs; the message waits for the session's next turn (a run
            without input answers it).
    """

    recorded: bool
    running: bool


@dataclass(frozen=True, slots=True)
class FollowUp:
    """The mark a turn's chunks end with when its last write saw :data:`STEER_FLAG`."""


FOLLOW_UP = FollowUp()


async def steer(
    store: Store, session_id: str, message: Mapping[str, Any], message_id: str | None
) -> Steered:
    """Store ``message`` (a checked user message, as the executor stores input) for the
    session's running turn; see the module docstring.

    Raises:
        SessionNotFoundError: no such session (nothing written).
    """
    snapshot = await store.read_snapshot(session_id)
    session = snapshot.session
    if session is None:
        raise SessionNotFoundError(
            f"no session {session_id!r} to steer; start it with a user message"
        )
    stored = UserRecord.decode(message)
    record = replace(stored, message_id=message_id or stored.message_id, steered=True)
    if record.message_id is not None and _in_log(snapshot, record.message_id):
        # Sent again (a retry of the message that started the turn, or of one delivered).
        return Steered(recorded=False, running=_running(session))
    if not session.meta.get(STEER_FLAG):
        # Set before the message is queued: a turn that ends in between still sees the flag.
        await store.update_session_meta(session_id, {STEER_FLAG: True})
    key = f"steer:{record.message_id}" if record.message_id else None
    recorded = await store.enqueue_context(
        session_id,
        [record.encode()],
        source=STEER_SOURCE,
        origin=STEER_ORIGIN,
        key=key,
        on_key_conflict="ignore",
    )
    now = await store.get_session(session_id)
    return Steered(recorded=recorded > 0, running=now is not None and _running(now))


def _running(session: SessionRecord) -> bool:
    return session.status == "running" and not session.lease_expired()


def _in_log(snapshot: Snapshot, message_id: str) -> bool:
    """A user message of that client id is in the session's log already."""
    return any(
        r.role == "user" and UserRecord.decode(r.payload).message_id == message_id
        for r in snapshot.log
    )


def steering_chunks(records: Sequence[LogRecord]) -> list[Chunk]:
    """The :class:`SteeringMessage` chunk of each steered message among a commit's records."""
    chunks: list[Chunk] = []
    for record in records:
        if record.role != "user":
            continue
        stored = UserRecord.decode(record.payload)
        if stored.steered:
            chunks.append(
                SteeringMessage(
                    id=stored.message_id or f"log-{record.seq}", parts=stored.ui_parts()
                )
            )
    return chunks


def without_steered(request: TurnRequest, snapshot: Snapshot) -> TurnRequest:
    """``request`` without its message when that message (by the client's id) waits steered
    in the queue: posted again once the turn it was steered to had ended, it is stored once,
    delivered by the turn's first commit."""
    message_id = UserRecord.decode(request.message).message_id if request.message else None
    if message_id is None:
        return request
    for entry in snapshot.pending:
        if entry.source == STEER_SOURCE and entry.key == f"steer:{message_id}":
            return replace(request, message=None)
    return request


async def has_steered(store: Store, session_id: str) -> bool:
    """Steered messages wait in the session's queue; when none does, the flag is cleared."""
    snapshot = await store.read_snapshot(session_id)
    if any(entry.source == STEER_SOURCE for entry in snapshot.pending):
        return True
    if snapshot.session is not None and snapshot.session.meta.get(STEER_FLAG):
        await store.update_session_meta(session_id, {STEER_FLAG: None})
    return False


async def _still_steered(request: TurnRequest) -> bool:
    """:func:`has_steered`, where a failure only leaves the message for the next turn: the
    turn that ran has ended well, and its stream ends so."""
    try:
        return await has_steered(request.store, request.session_id)
    except Exception:
        logger.exception("could not look for steered messages of session %r", request.session_id)
        return False


OneTurn = Callable[[TurnRequest], AsyncGenerator[Chunk | FollowUp, None]]


async def follow_ups(request: TurnRequest, one_turn: OneTurn) -> AsyncGenerator[Chunk, None]:
    """The chunks of the turn ``request`` asks for, and of the turns that answer what was
    steered to it too late (see the module docstring): one UI message, one ``finish``."""
    finish: Finish | None = None
    message_id = request.message_id
    current: TurnRequest | None = request
    while current is not None:
        follow, later, opened = False, current is not request, False
        async with aclosing(one_turn(current)) as chunks:
            async for chunk in chunks:
                if isinstance(chunk, FollowUp):
                    follow = True
                    continue
                if later and not opened and isinstance(chunk, ErrorChunk):
                    # Not opened: another process's turn took the session (or the message)
                    # first, and answers it there.
                    break
                opened = True
                if isinstance(chunk, Start):
                    message_id = message_id or chunk.message_id
                    if later:
                        continue
                if isinstance(chunk, Finish):
                    finish = chunk  # held: a follow-up continues the same message
                    continue
                yield chunk
        current = None
        if follow and finish is not None and await _still_steered(request):
            current = replace(
                request,
                writer=FencedWriter(request.store),
                message=None,
                answers=(),
                message_id=message_id,
            )
    if finish is not None:
        yield finish
