"""A server shutting down ends its running turns: :func:`lifespan`.

On shutdown (a rolling deploy's SIGTERM) every turn this process runs ends as a stop ends it —
what was streamed is stored as interrupted, the session is set idle and its lease released —
within a bounded grace period, on every store (README, "Reliability notes"). Two moments
matter with uvicorn: its signal handler first waits for open connections to close (forever,
by default; a chat stream stays open for its whole turn), and only then runs the app's
lifespan shutdown. So the lifespan also chains onto the SIGTERM/SIGINT handler it finds at
startup: the signal starts ending the turns at once, their streams end, the connections close
and uvicorn goes on; the lifespan's shutdown then waits, at most ``grace`` seconds, for any
turn still ending (uvicorn's ``timeout_graceful_shutdown`` cancels the requests instead: the
turns end the same way, and the wait keeps the process alive until their writes are done).
A turn that cannot end in time (its store is away) is left to its lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import AsyncIterator, Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..models import load_litellm
from ._turns import RunningTurns

if TYPE_CHECKING:
    from ..session import Executor

__all__ = ["SHUTDOWN_GRACE", "lifespan"]

logger = logging.getLogger("helix_stream.server")

SHUTDOWN_GRACE = 10.0
"""Seconds a shutdown waits for the running turns to end (under Kubernetes' default 30 s)."""

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.asynccontextmanager
async def lifespan(
    app: Any,
    turns: RunningTurns | None = None,
    *,
    grace: float = SHUTDOWN_GRACE,
    executor: Executor | None = None,
) -> AsyncIterator[None]:
    """An app lifespan: imports litellm at startup; at shutdown, ends the running turns, then
    closes ``executor`` (``executor.close()``: its agents' MCP servers).

    Importing litellm during a request would block every connection of the process for
    seconds. :func:`create_app` uses it with its routes' turns. Mounting :func:`routes` in your
    own app, pass the routes a ``turns=RunningTurns()`` and use
    ``functools.partial(lifespan, turns=turns, executor=executor)`` as the app's lifespan
    (FastAPI: ``FastAPI(lifespan=...)``), or call ``await turns.stop_all()`` and
    ``await executor.close()`` in your own lifespan's shutdown.

    Args:
        app: The app (unused).
        turns: The turns the routes run; ``None``: only the import.
        grace: Seconds the shutdown waits for the turns to end.
        executor: Closed last; ``None``: nothing to close.

    Example::

        from functools import partial

        from fastapi import FastAPI

        turns = RunningTurns()
        app = FastAPI(lifespan=partial(lifespan, turns=turns, executor=executor))
        app.include_router(fastapi_router(executor, agent, check_caller, turns=turns))
    """
    load_litellm()
    try:
        async with _ending(turns, grace):
            yield
    finally:
        if executor is not None:
            await executor.close()


@contextlib.asynccontextmanager
async def _ending(turns: RunningTurns | None, grace: float) -> AsyncIterator[None]:
    """Ends ``turns`` at shutdown (on the server's signal already, or on leaving)."""
    if turns is None:
        yield
        return
    loop = asyncio.get_running_loop()
    ending: list[asyncio.Task[int]] = []

    def end_turns() -> None:
        if not ending:
            ending.append(loop.create_task(turns.stop_all(timeout=grace)))

    def notify() -> None:  # in a signal handler: only schedule
        loop.call_soon_threadsafe(end_turns)

    restore = _chain_signals(notify)
    try:
        yield
    finally:
        restore()
        end_turns()
        with contextlib.suppress(Exception):
            stopped = await asyncio.wait_for(asyncio.shield(ending[0]), grace + 1.0)
            if stopped:
                logger.info("shutdown ended %d running turn(s) as interrupted", stopped)


def _chain_signals(notify: Callable[[], None]) -> Callable[[], None]:
    """Call ``notify`` on SIGTERM/SIGINT before the handler found (uvicorn's); return what
    restores it. Signals are the main thread's only: elsewhere, nothing is chained."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    found: dict[int, Callable[[int, FrameType | None], Any]] = {}

    def handler(sig: int, frame: FrameType | None) -> None:
        notify()
        found[sig](sig, frame)

    for sig in _SIGNALS:
        previous = signal.getsignal(sig)
        # Only onto a Python handler (a server's): the default action would end the process
        # with no grace, and an ignored signal stays ignored.
        if callable(previous):
            found[sig] = previous
            signal.signal(sig, handler)

    def restore() -> None:
        for sig, previous in found.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, previous)

    return restore
