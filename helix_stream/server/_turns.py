"""The turns running in this process, and how ``POST {api}/{id}/stop`` ends one.

This module owns :class:`RunningTurns`. The chat route registers each turn under its session id
before the turn claims the session (:meth:`RunningTurns.reserve`) and hands the turn's chunk
stream through :meth:`RunningTurns.track` before it becomes the UI stream; the turn stays
registered until that stream has ended. :meth:`RunningTurns.stop` ends a registered
turn the way the package ends any turn early — it cancels the task that reads the turn's
stream, so the model stream is closed, running tools are cancelled and the session stores what
was streamed as interrupted, then idle — and returns once the turn has ended. The cancellation
is the stop's own: :meth:`track` takes it back (``Task.uncancel``) and ends the stream with an
:class:`~helix_stream.chunks.Abort` chunk, so every client of the stream (the one that posted
it, a tab that resumed it) gets the open parts ended and the AI SDK's ``abort``.

A turn runs in one process at a time; this registry sees only its own. Stopping a turn that
runs in another process goes through the store (``Executor.request_stop``: the turn's lease
heartbeat reads the request back and calls :meth:`stop_soon`), or through
:class:`StopElsewhere` (the routes' ``stop_elsewhere`` option) when one is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterable
from dataclasses import dataclass, field
from typing import Protocol

from .._cleanup import CLEANUP_TIMEOUT, aclose_quietly
from ..chunks import Abort, Chunk
from ..models._retry import LOG_SESSION

__all__ = ["STOP_REASON", "RunningTurns", "StopElsewhere"]

STOP_REASON = "stopped"
"""The ``reason`` of the ``abort`` chunk that ends a stopped turn's stream."""


class StopElsewhere(Protocol):
    """``stop_elsewhere(session_id)``: stop a turn that runs in another process.

    Called by the stop route when the session is running but not in this process. Return
    once that turn has ended: ``True`` if one was stopped, ``False`` if none was running.
    Raise a :class:`~helix_stream.errors.HelixError` to refuse.

    Example::

        async def stop_on_other_replica(session_id: str) -> bool:
            return False                                   # e.g. ask the replica that runs it

        stop: StopElsewhere = stop_on_other_replica
    """

    async def __call__(self, session_id: str, /) -> bool: ...


@dataclass(slots=True, kw_only=True)
class _Turn:
    session_id: str
    task: asyncio.Task[object] | None = None  # the task that reads the stream, once it does
    stopping: bool = False
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class RunningTurns:
    """The turns this process runs, by session id (a session runs one turn at a time).

    Example::

        from functools import partial

        from starlette.applications import Starlette

        turns = RunningTurns()
        app = Starlette(routes=routes(executor, agent, check_caller, turns=turns),
                        lifespan=partial(lifespan, turns=turns, executor=executor))
    """

    def __init__(self) -> None:
        self._turns: dict[str, _Turn] = {}
        self._stopping: set[asyncio.Task[bool]] = set()

    def __len__(self) -> int:
        return len(self._turns)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._turns

    def reserve(self, session_id: str) -> _Turn:
        """Register a turn of ``session_id`` that is about to start (before its claim).

        A stop that comes between the claim and the first read of the stream still finds it.
        Hand the turn's stream to :meth:`track`, or :meth:`release` it if it did not start.
        """
        turn = _Turn(session_id=session_id)
        self._turns.setdefault(session_id, turn)  # one that runs here already keeps its place
        return turn

    def release(self, turn: _Turn) -> None:
        """Forget a reserved turn that did not start (its claim was refused)."""
        self._end(turn)

    def track(self, turn: _Turn, chunks: AsyncIterable[Chunk]) -> AsyncGenerator[Chunk, None]:
        """Pass the started turn's ``chunks`` through; it stays registered until they end."""
        self._turns[turn.session_id] = turn
        return self._pass(turn, chunks)

    async def _pass(self, turn: _Turn, chunks: AsyncIterable[Chunk]) -> AsyncGenerator[Chunk, None]:
        turn.task = asyncio.current_task()
        # The task's context, which the turn's code runs in: its log lines name the session.
        LOG_SESSION.set(turn.session_id)
        try:
            if turn.stopping:  # stopped before its stream was read
                await aclose_quietly(chunks, what="closing a stopped turn")
                self._end(turn)
                yield Abort(reason=STOP_REASON)
                return
            try:
                async for chunk in chunks:
                    yield chunk
            except asyncio.CancelledError:
                # The turn has ended already: the cancellation went through it on its way
                # here. Only the stop's own cancellation is taken back, and only when no one
                # else cancelled this task too (a server shutting down).
                if not turn.stopping or turn.task is None or turn.task.uncancel() > 0:
                    raise
                self._end(turn)
                yield Abort(reason=STOP_REASON)
        finally:
            await aclose_quietly(chunks, what="closing the turn's chunk stream")
            self._end(turn)

    def _end(self, turn: _Turn) -> None:
        if self._turns.get(turn.session_id) is turn:
            del self._turns[turn.session_id]
        turn.ended.set()

    async def stop_all(self, *, timeout: float = CLEANUP_TIMEOUT) -> int:
        """Stop every turn running in this process (a server shutting down); return how many.

        Each ends as a stop ends it: what was streamed stored as interrupted, the session
        idle, its lease released. Returns once all have ended, or after ``timeout`` seconds
        (a turn still ending then is left to its lease).
        """
        ids = list(self._turns)
        if not ids:
            return 0
        results = await asyncio.gather(
            *(self.stop(sid, timeout=timeout) for sid in ids), return_exceptions=True
        )
        return sum(1 for r in results if r is True)

    def stop_soon(self, session_id: str) -> None:
        """Stop the turn of ``session_id`` from a callback that cannot wait (a turn's
        ``on_stop_requested``: a stop that came through the store from another process)."""
        task = asyncio.get_running_loop().create_task(self.stop(session_id))
        self._stopping.add(task)  # referenced until done: a task nobody holds may vanish
        task.add_done_callback(self._stopping.discard)

    async def stop(self, session_id: str, *, timeout: float = CLEANUP_TIMEOUT) -> bool:
        """Stop the turn of ``session_id`` if it runs in this process; return once it ended.

        Returns:
            ``True`` if a turn was stopped, ``False`` if none of the session runs here.

        Raises:
            TimeoutError: the turn had not ended ``timeout`` seconds after the stop (its
                cleanup is bounded by the same deadline, so this does not happen in practice).
        """
        turn = self._turns.get(session_id)
        if turn is None:
            return False
        if not turn.stopping:
            turn.stopping = True
            if turn.task is not None and turn.task is not asyncio.current_task():
                turn.task.cancel()
        await asyncio.wait_for(turn.ended.wait(), timeout)
        return True
