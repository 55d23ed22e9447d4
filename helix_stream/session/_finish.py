"""How a turn ends when its last step did not end it: failed, or cut short.

A turn whose last step was written has its final status already (``idle`` or ``paused``,
in that step's write). Otherwise, this module owns what happens:

* the turn failed (a model error, a tool hook, a store error): the session becomes
  ``failed`` — the next run or ``retry()`` works from there — the failure events are
  dispatched, and one WARNING record on ``helix_stream.session`` names the session, the turn
  and the error type;
* the consumer stopped (a client went away, the task was cancelled): the session becomes
  ``idle``, consistent, with every committed row and step kept.

Either way the text the unfinished step had already streamed — what the user saw — is stored
with that write as the turn's assistant message, marked interrupted, so that the stored chat
matches the screen and the next request still alternates user and assistant. A failed turn's
message also keeps the error's code (``metadata.error`` of the stored UI message: a reloaded
chat shows the same failure as the live one did).

The status write runs through :func:`helix_stream._cleanup.run_cleanup`, shielded from
cancellation (a cancelled request cancels every later await under anyio), and is retried with
a bounded backoff for about two minutes while the store is away (a full disk, a PostgreSQL
outage): a session must not stay ``running`` because one write failed. It stops at once when
the turn's lease was taken over (the session is another turn's), and if the store stays away
longer the lease frees the session anyway.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from .._cleanup import run_cleanup
from ..errors import SessionLeaseLostError, SessionNotFoundError
from ..state import TurnInfo
from ..store import SessionStatus, TurnWrite
from ._events import TurnEvents
from ._lease import TurnWriter
from ._records import failed_record

__all__ = ["finish_turn", "log_failure"]

logger = logging.getLogger("helix_stream.session")

# Seconds before each retry of the final status write (a store that is away for a while, a
# PostgreSQL failover or outage, a disk that was full: about two minutes in all).
_RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, *(8.0,) * 14)


async def finish_turn(
    writer: TurnWriter,
    events: TurnEvents,
    *,
    session_id: str,
    turn: TurnInfo,
    error: BaseException | None,
    in_step: bool,
    unfinished: dict[str, Any] | None,
) -> None:
    """End a turn that failed (``error``) or was cut short (see the module docstring); never
    raises.

    Args:
        writer: How the turn writes its session (with its lease).
        events: The turn's event dispatcher (for the failure events).
        session_id: The session.
        turn: The turn (for the log record).
        error: The turn's error; ``None`` when it was cut short.
        in_step: A step was running (its ``step.failed`` event is due).
        unfinished: The assistant record of the step cut short (its streamed text), if any.
    """

    async def finish() -> None:
        status: SessionStatus = "idle" if error is None else "failed"
        stored = unfinished
        if error is not None:
            log_failure(session_id, turn, error)
            stored = failed_record(unfinished, error) if unfinished else None
        write = TurnWrite(status=status, messages=[stored] if stored else [])
        await _write_status(writer, session_id, write)
        if error is not None:
            data = {"error": type(error).__name__, "code": getattr(error, "code", None)}
            await events.failure(data, in_step=in_step)

    # Past the cleanup default (30 s): the status write may retry for about two minutes.
    timeout = sum(_RETRY_DELAYS) + 30.0
    await run_cleanup(finish, what=f"ending the turn of session {session_id!r}", timeout=timeout)


async def _write_status(writer: TurnWriter, session_id: str, write: TurnWrite) -> None:
    for attempt, delay in enumerate((*_RETRY_DELAYS, None)):
        try:
            await writer.write_turn(session_id, write)
            if attempt:
                logger.info(
                    "set session %r to %s after its turn, on try %d",
                    session_id,
                    write.status,
                    attempt + 1,
                    extra={"session_id": session_id},
                )
            return
        except (SessionLeaseLostError, SessionNotFoundError):
            return  # another turn took the session over (or it is gone): nothing to end
        except Exception:
            if delay is None:
                logger.exception(
                    "could not set session %r to %s after its turn; its lease frees it for the "
                    "next turn",
                    session_id,
                    write.status,
                    extra={"session_id": session_id},
                )
                return
            await asyncio.sleep(delay)


def log_failure(session_id: str, turn: TurnInfo | None, error: BaseException) -> None:
    """One WARNING record for a failed turn: session, turn, error type (no message text: it
    may quote what a tool or a provider should not have echoed)."""
    logger.warning(
        "turn %s of session %r failed: %s (%s)",
        turn.sequence if turn else 0,
        session_id,
        type(error).__name__,
        getattr(error, "code", "-"),
        extra={
            "event": "core.turn.failed",
            "session_id": session_id,
            "turn_id": turn.id if turn else "",
            "error_type": type(error).__name__,
        },
    )
