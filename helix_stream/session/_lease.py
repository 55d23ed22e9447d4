"""The lease a running turn holds its session with: :class:`TurnLease`.

A turn claims its session with a lease (README, "Reliability notes"): a token of its own and
an expiry on the session row (``TurnWrite.lease``; the store's planner decides every rule).
Every write of the turn carries the token — the turn's store is a :class:`FencedStore` that
adds it — so a turn whose session was taken over can no longer write anything, and each of
those writes renews the lease. Between writes, a heartbeat task renews it every
``lease_renew_seconds`` (one small write), whatever the turn is doing: a tool that runs for
minutes keeps its session, a process that died frees it ``lease_seconds`` after its last
renewal, and the next turn on any process takes it over (``open_turn``).

The heartbeat also carries a stop from another process (``Executor.request_stop``): that writes
the lease's token under :data:`STOP_KEY` in the session's meta, and the beat that reads it back
calls the turn's ``on_stop_requested`` (the chat server's: it stops the turn as its own stop
route does). So a stop reaches a turn on any replica within one renew interval.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from ..errors import SessionLeaseLostError
from ..store import (
    Checkpoint,
    Lease,
    LogRecord,
    RewindResult,
    SessionRecord,
    SignInTable,
    Snapshot,
    Store,
    StreamLog,
    TokenTable,
    TurnWrite,
    TurnWriteResult,
)
from ..store._writes import StoreWrites

__all__ = ["STOP_KEY", "FencedStore", "TurnLease"]

STOP_KEY = "helix.stop"
"""Session meta key of a stop request: the token of the lease whose turn is to stop."""

logger = logging.getLogger("helix_stream.session")


class FencedStore(StoreWrites):
    """``store`` as one turn uses it: every ``write_turn`` carries the turn's lease, and so do
    ``set_status`` and ``update_session_meta`` (``StoreWrites`` writes both through ``write_turn``);
    the other methods pass through.

    Attributes:
        held: The turn's claim applied: the session is the turn's (until taken over).
        released: The turn's final status was written: later writes are not fenced.
    """

    def __init__(self, store: Store, lease: Lease) -> None:
        self.inner = store
        self.lease = lease
        self.held = False
        self.released = False
        self.write_transactions = 0  # the store's counter is the store's (``inner``)

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        if self.released:
            # After its final status (a hook that runs once the turn ended): the session is
            # no longer the turn's to fence.
            return await self.inner.write_turn(session_id, write)
        result = await self.inner.write_turn(session_id, replace(write, lease=self.lease))
        if write.status == "running" and result.applied:
            self.held = True
        elif write.status is not None and write.status != "running" and result.applied:
            self.held, self.released = False, True
        return result

    @property
    def lease_seconds(self) -> float:
        return self.inner.lease_seconds

    @property
    def lease_renew_seconds(self) -> float:
        return self.inner.lease_renew_seconds

    @property
    def sign_in_table(self) -> SignInTable | None:
        return self.inner.sign_in_table

    @property
    def token_table(self) -> TokenTable | None:
        return self.inner.token_table

    @property
    def stream_log(self) -> StreamLog | None:
        return self.inner.stream_log

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return await self.inner.get_session(session_id)

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        return await self.inner.read_log(session_id, after_seq=after_seq)

    async def enqueue_context(
        self,
        session_id: str,
        items: Sequence[dict[str, Any]],
        *,
        source: str,
        origin: Mapping[str, Any],
        key: str | None = None,
        on_key_conflict: Literal["raise", "ignore"] = "raise",
    ) -> int:
        # Not a write of the turn: anyone may queue context for a session.
        return await self.inner.enqueue_context(
            session_id, items, source=source, origin=origin, key=key,
            on_key_conflict=on_key_conflict,
        )  # fmt: skip

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        return await self.inner.checkpoints(session_id)

    async def last_seq(self, session_id: str) -> int:
        return await self.inner.last_seq(session_id)

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        return await self.inner.rewind(session_id, to_seq)

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        return await self.inner.branch(source_id, new_id, upto_seq=upto_seq, agent_name=agent_name)

    async def read_snapshot(self, session_id: str) -> Snapshot:
        return await self.inner.read_snapshot(session_id)

    async def close(self) -> None:
        """The turn does not own the store: nothing to close."""


class TurnLease:
    """One turn's lease on its session: the fenced store the turn writes through, and the
    heartbeat that renews the lease while the turn holds it.

    Args:
        store: The session's store (its ``lease_seconds`` and ``lease_renew_seconds``).
        session_id: The session.
        on_stop_requested: Called (once) when a stop request for this turn is read back;
            ``None``: the heartbeat does not look for one.
    """

    def __init__(
        self,
        store: Store,
        session_id: str,
        on_stop_requested: Callable[[], None] | None = None,
    ) -> None:
        seconds = float(store.lease_seconds)
        self.renew_every = float(store.lease_renew_seconds)
        self.store = FencedStore(store, Lease(token=uuid.uuid4().hex, seconds=seconds))
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
        fenced = self.store
        while True:
            await asyncio.sleep(self.renew_every)
            if not fenced.held:
                continue  # not claimed yet (or released): nothing to renew
            try:
                renewed = await fenced.inner.write_turn(
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
