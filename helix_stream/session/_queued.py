"""Queued turns: a user message that arrives while a turn runs, run as the next turn.

This module owns the order of :meth:`Executor.queue`: the messages queued for one session in
one process start in the order they came (one lock per session, whose waiters are served
first come, first served), each once no turn of the session runs. Between the turns it reads
only the session's record (``Store.get_session``, no log), a few times a second; the claim of
the turn that starts is the store's compare-and-set, so a turn started elsewhere meanwhile
(another replica, a steered follow-up) is simply waited for too. Across processes the order
is the order of their claims.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..errors import SessionBusyError
from ..store import Store

__all__ = ["QUEUE_TIMEOUT", "QueuedTurns"]

QUEUE_TIMEOUT = 600.0
"""Default seconds a queued message waits for its turn before it is refused as busy."""

_POLL = 0.1  # seconds between two reads of a running session's status

T = TypeVar("T")


class QueuedTurns:
    """The queued messages of one executor's sessions, waiting for their turns."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}

    async def start(
        self,
        store: Store,
        session_id: str,
        start: Callable[[], Awaitable[T]],
        *,
        timeout: float = QUEUE_TIMEOUT,
    ) -> T:
        """``start()`` once the messages queued before this one have started and no turn of
        the session runs.

        Raises:
            SessionBusyError: the session still ran a turn after ``timeout`` seconds.
        """
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        self._waiting[session_id] = self._waiting.get(session_id, 0) + 1
        try:
            async with asyncio.timeout(timeout):
                async with lock:
                    return await _when_idle(store, session_id, start)
        except TimeoutError:
            raise SessionBusyError(
                f"session {session_id!r} was still running a turn after {timeout:g} s; the "
                "queued message was not run: send it again once the turn has ended"
            ) from None
        finally:
            self._waiting[session_id] -= 1
            if not self._waiting[session_id]:
                # The last waiter leaves: forget the session (no lock kept per session ever).
                del self._waiting[session_id], self._locks[session_id]


async def _when_idle(store: Store, session_id: str, start: Callable[[], Awaitable[T]]) -> T:
    while True:
        session = await store.get_session(session_id)
        if session is None or session.status != "running" or session.lease_expired():
            try:
                return await start()
            except SessionBusyError:
                pass  # another turn claimed it first: wait for that one too
        await asyncio.sleep(_POLL)
