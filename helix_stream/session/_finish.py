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
matches the screen and the next request still alternates user and assistant.

The status write runs through :func:`helix_stream._cleanup.run_cleanup`, shielded from
cancellation (a cancelled request cancels every later await under anyio), and is retried for
about 16 s: a session must never stay ``running`` because one write failed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from .._cleanup import run_cleanup
from ..store import SessionStatus, TurnWrite

if TYPE_CHECKING:
    from ._turn import Turn

__all__ = ["finish_turn", "log_failure"]

logger = logging.getLogger("helix_stream.session")

# Seconds before each retry of the final status write (a store that is away for a while, a
# PostgreSQL failover: about 16 s in all).
_RETRY_DELAYS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


async def finish_turn(turn: Turn, *, error: BaseException | None, done: bool) -> None:
    """End ``turn`` (see the module docstring); never raises."""
    if error is None and (done or turn.ended):
        return

    async def finish() -> None:
        if error is not None:
            log_failure(turn, error)
            await _set_status(turn, "failed")
            data = {"error": type(error).__name__, "code": getattr(error, "code", None)}
            await turn.events.failure(data, in_step=turn.in_step)
        else:
            await _set_status(turn, "idle")

    await run_cleanup(finish, what=f"ending the turn of session {turn.session_id!r}")


async def _set_status(turn: Turn, status: SessionStatus) -> None:
    partial = turn.interrupted_message()
    write = TurnWrite(status=status, messages=[partial] if partial else [])
    for delay in (*_RETRY_DELAYS, None):
        try:
            await turn.store.write_turn(turn.session_id, write)
            return
        except Exception:
            if delay is None:
                logger.exception(
                    "could not set session %r to %s after its turn; it stays 'running' until "
                    "executor.resume() is called",
                    turn.session_id,
                    status,
                    extra={"session_id": turn.session_id},
                )
                return
            await asyncio.sleep(delay)


def log_failure(turn: Turn, error: BaseException) -> None:
    """One WARNING record for a failed turn: session, turn, error type (no message text: it
    may quote what a tool or a provider should not have echoed)."""
    logger.warning(
        "turn %s of session %r failed: %s (%s)",
        turn.scope.info.turn.sequence,
        turn.session_id,
        type(error).__name__,
        getattr(error, "code", "-"),
        extra={
            "event": "core.turn.failed",
            "session_id": turn.session_id,
            "turn_id": turn.scope.info.turn.id,
            "error_type": type(error).__name__,
        },
    )
