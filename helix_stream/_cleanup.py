"""Cleanup that must finish although its task is being cancelled: one helper, one timeout.

This module owns :data:`CLEANUP_TIMEOUT` and :func:`run_cleanup`. When a client disconnects, the
serving path cancels the generation once; what runs after that (closing the model stream,
cancelling running tools, setting the session idle, ``on_finish``) awaits, and must neither be
cut short by a second cancellation (a server shutting down, an anyio cancel scope around the
request that cancels every later await) nor hang the process. :func:`run_cleanup` runs it
shielded from cancellation and bounded by one deadline, and logs a failure instead of raising
it, so that the cleanup of the layer above still runs.

Every layer of the serving path that cleans up after a cancellation calls it (the SSE response,
the UI stream, the resume registry; the session turn), so one timeout governs them all.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

__all__ = ["CLEANUP_TIMEOUT", "aclose_quietly", "run_cleanup"]

logger = logging.getLogger("helix_stream.cleanup")

CLEANUP_TIMEOUT = 30.0
"""Seconds a cleanup may take once its task is being cancelled (then it is abandoned): long
enough for a turn to write its final status through a short store outage (a PostgreSQL
failover). A turn's own final status write retries for longer (session/_finish.py); if it
gives up, the session's lease expires and the next turn takes it over."""


async def run_cleanup(
    cleanup: Callable[[], Awaitable[object]],
    *,
    what: str,
    timeout: float = CLEANUP_TIMEOUT,
) -> bool:
    """Run ``cleanup()`` to the end, shielded from cancellation, for at most ``timeout`` s.

    Args:
        cleanup: The coroutine function to run.
        what: What it does, for the log (``"closing the UI stream"``).
        timeout: The deadline; past it the cleanup is cancelled and a warning is logged.

    Returns:
        Whether it completed (``False`` if it raised or ran out of time; both are logged).
    """
    with anyio.move_on_after(timeout, shield=True) as scope:
        try:
            await cleanup()
        except Exception:
            logger.exception("%s failed", what)
            return False
    if scope.cancelled_caught:
        logger.warning("%s took longer than %s s and was abandoned", what, timeout)
        return False
    return True


async def aclose_quietly(resource: object, *, what: str) -> bool:
    """``await resource.aclose()`` if it has one, through :func:`run_cleanup`."""
    aclose = getattr(resource, "aclose", None)
    if aclose is None:
        return True
    return await run_cleanup(aclose, what=what)
