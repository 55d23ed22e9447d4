"""The lease a running turn holds its session with: :class:`FencedWriter`, :class:`TurnLease`.

A turn claims its session with a lease (README, "Reliability notes"): a token of its own and
an expiry on the session row (``TurnWrite.lease``; the store's planner decides every rule).
Every write of the turn carries the token — the turn writes through a :class:`FencedWriter`,
which adds it to each ``write_turn`` — so a turn whose session was taken over can no longer
write anything, and each of those writes renews the lease. Between writes, a heartbeat task
renews it every ``lease_renew_seconds`` (one small write), whatever the turn is doing: a tool
that runs for minutes keeps its session, a process that died frees it ``lease_seconds`` after
its last renewal, and the next turn on any process takes it over (``open_turn``).

The heartbeat also carries a stop from another process (``Executor.request_stop``): that writes
the lease's token under :data:`STOP_KEY` in the session's meta, and the beat that reads it back
calls the turn's ``on_stop_requested`` (the chat server's: it stops the turn as its own stop
route does). So a stop reaches a turn on any replica within one renew interval.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from ..errors import SessionLeaseLostError
from ..store import Lease, Store, TurnWrite, TurnWriteResult

__all__ = ["STOP_KEY", "FencedWriter", "TurnLease", "TurnWriter"]

STOP_KEY = "helix.stop"
"""Session meta key of a stop request: the token of the lease whose turn is to stop."""

logger = logging.getLogger("helix_stream.session")


class TurnWriter(Protocol):
    """How a turn writes its session: one method, the store's ``write_turn`` (a plain
    :class:`~helix_stream.store.Store` is one; a turn is given a :class:`FencedWriter`)."""

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        """Apply ``write`` in one transaction (``Store.write_turn``)."""
        ...


class FencedWriter:
    """One turn's writes: ``store.write_turn`` with the turn's lease on every write.

    The turn reads and queues context through the store itself; only its writes go through
    here (each is a ``TurnWrite``: a status and a meta patch are ``TurnWrite`` s too).

    Attributes:
        store: The session's store.
        lease: The turn's lease.
        held: The turn's claim applied: the session is the turn's (until taken over).
        released: The turn's final status was written: later writes are not fenced.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self.lease = Lease(token=uuid.uuid4().hex, seconds=float(store.lease_seconds))
        self.held = False
        self.released = False

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        """Apply ``write`` with the turn's lease (``Store.write_turn``)."""
        if self.released:
            # After its final status (a hook that runs once the turn ended): the session is
            # no longer the turn's to fence.
            return await self.store.write_turn(session_id, write)
        result = await self.store.write_turn(session_id, replace(write, lease=self.lease))
        if write.status == "running" and result.applied:
            self.held = True
        elif write.status is not None and write.status != "running" and result.applied:
            self.held, self.released = False, True
        return result


class TurnLease:
    """One turn's lease on its session: the heartbeat that renews it while the turn holds it.

    Args:
        writer: The turn's writer (its store's ``lease_renew_seconds`` says how often).
        session_id: The session.
        on_stop_requested: Called (once) when a stop request for this turn is read back;
            ``None``: the heartbeat does not look for one.
    """

    def __init__(
        self,
        writer: FencedWriter,
        session_id: str,
        on_stop_requested: Callable[[], None] | None = None,
    ) -> None:
        self.renew_every = float(writer.store.lease_renew_seconds)
        self.writer = writer
        self.session_id = session_id
        self._on_stop = on_stop_requested
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the heartbeat (a task of the turn's event loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._beat(), name=f"helix-lease:{self.session_id}"
            )

    async def stop(self) -> None:
        """Stop the heartbeat; the turn's final write released the lease (or it was lost)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()  # at once: even if this await is itself cancelled, it stops
            await asyncio.wait([task])

    async def _beat(self) -> None:
        fenced = self.writer
        while True:
            await asyncio.sleep(self.renew_every)
            if not fenced.held:
                continue  # not claimed yet (or released): nothing to renew
            try:
                renewed = await fenced.store.write_turn(
                    self.session_id, TurnWrite(lease=fenced.lease)
                )
            except SessionLeaseLostError:
                if not fenced.held:
                    return  # the turn's final write released it meanwhile
                logger.warning(
                    "turn of session %r lost its lease: another turn took the session over",
                    self.session_id,
                    extra={"session_id": self.session_id, "event": "core.turn.lease_lost"},
                )
                fenced.held = False
                return
            except Exception:  # the store is away: the next beat tries again
                logger.debug("lease renewal of %r failed", self.session_id, exc_info=True)
                continue
            # The renewal returns the session as it is now: a stop request is read from it.
            stop = renewed.session.meta.get(STOP_KEY) == fenced.lease.token
            if stop and self._on_stop is not None:
                on_stop, self._on_stop = self._on_stop, None
                on_stop()
