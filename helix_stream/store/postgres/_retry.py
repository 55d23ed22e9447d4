"""PostgresStore after a lost connection: one more try on a fresh one, and a write never twice.

A pooled connection can die between two calls (a server restart, a failover, a backend ended
by ``pg_terminate_backend``); the pool only finds out when a call uses it. :func:`with_retry`
runs a call; if the call's connection turned out dead, it has the pool check every idle
connection (``pool.check()`` drops the dead ones and opens new ones in the background) and runs
the call once more, on a connection that works or a new one.

A read is always safe to run again. A write runs again only when its first try cannot have
committed:

- the connection was lost before ``COMMIT`` was sent: the server rolls the transaction back
  when its connection goes, so nothing of it was applied;
- the connection was lost while ``COMMIT`` was in flight: the write may or may not have been
  applied. Every write transaction learns its transaction id before it commits
  (``txid_current()``), so :func:`committed` asks the server on a fresh connection
  (``txid_status()``): ``committed`` → the first try's result stands and nothing runs again;
  ``aborted`` → the write runs again. ``in progress`` means the old backend has not noticed its
  client is gone: it is ended by its pid and transaction id (never another session's backend)
  and asked about again. Only if the answer cannot be had does the call raise
  :class:`~helix_stream.errors.StoreCommitUnknownError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from helix_stream.errors import StoreCommitUnknownError, StoreUnavailableError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

__all__ = ["SQL_XID", "Attempt", "committed", "with_retry"]

_T = TypeVar("_T")
log = logging.getLogger("helix_stream.store")

# The transaction's 64-bit id (epoch and xid); txid_status() takes the same form. Both exist
# since PostgreSQL 10 (the pg_current_xact_id() spelling only since 13).
SQL_XID = "SELECT txid_current()"
_SQL_STATUS = "SELECT txid_status(%s)"
# Only the backend that still runs this very transaction: pid and xid must both match.
_SQL_END_BACKEND = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE pid = %s AND backend_xid::text = %s"
)
# How long committed() waits for an ended backend's transaction to be settled.
_POLLS, _POLL_SECONDS = 40, 0.05


@dataclass(slots=True)
class Attempt:
    """How far one try of a call got: its connection, and for a write its backend, transaction
    id, result, and whether ``COMMIT`` may have been sent."""

    conn: AsyncConnection[TupleRow] | None = None
    pid: int = 0
    xid: int | None = None
    result: Any = None
    committing: bool = False

    @property
    def lost(self) -> bool:
        """Whether the try failed because its connection died (not because of its SQL)."""
        return self.conn is not None and self.conn.closed


async def with_retry(
    pool: AsyncConnectionPool[AsyncConnection[TupleRow]],
    once: Callable[[Attempt], Awaitable[_T]],
    *,
    pool_timeout: type[Exception],
    on_resolved: Callable[[], None],
    what: str,
) -> _T:
    """Run ``once``; after a lost connection, once more (see the module docstring).

    ``on_resolved`` is called when a write whose ``COMMIT`` reply was lost turns out committed.

    Raises:
        StoreUnavailableError: no connection came free in time, or the second try lost its
            connection too (nothing was written).
        StoreCommitUnknownError: whether a write committed could not be found out.
    """
    for last_try in (False, True):
        attempt = Attempt()
        try:
            return await once(attempt)
        except pool_timeout as exc:
            raise StoreUnavailableError(
                f"PostgreSQL: no connection to run {what} on came free in time; nothing was "
                "written. The server may be down or every pooled connection busy; try again."
            ) from exc
        except Exception as exc:
            if not attempt.lost:
                raise
            error = exc
        log.warning(
            "PostgreSQL connection lost during %s (%s); %s",
            what,
            type(error).__name__,
            "giving up" if last_try else "checking the pool and trying once more",
        )
        await pool.check()
        if attempt.committing and await committed(pool, attempt, what=what):
            on_resolved()
            return attempt.result  # type: ignore[no-any-return]
        if last_try:
            break
    raise StoreUnavailableError(
        f"PostgreSQL: {what} lost its connection twice; nothing was written. The server may be "
        "restarting; try again."
    ) from error


async def committed(
    pool: AsyncConnectionPool[AsyncConnection[TupleRow]], attempt: Attempt, *, what: str
) -> bool:
    """Whether the write of ``attempt``, whose connection was lost during ``COMMIT``, committed.

    Raises:
        StoreCommitUnknownError: the server could not say (unreachable, or the transaction is
            still open after its backend was asked to end).
    """
    assert attempt.xid is not None
    ended = False
    try:
        for _ in range(_POLLS):
            async with pool.connection() as conn:
                cur = await conn.execute(_SQL_STATUS, (attempt.xid,))
                row = await cur.fetchone()
                status = None if row is None else row[0]
                if status == "in progress" and not ended:
                    # Its backend has not seen the client go: end it, so that the transaction
                    # is settled (a COMMIT being processed still completes first).
                    await conn.execute(_SQL_END_BACKEND, (attempt.pid, str(attempt.xid % 2**32)))
                    log.warning(
                        "backend %s still held the transaction of %s after its client lost "
                        "the connection; ended it",
                        attempt.pid,
                        what,
                    )
                    ended = True
                    continue
            if status in ("committed", "aborted"):
                log.warning("the lost COMMIT of %s had %s; resolved", what, status)
                return bool(status == "committed")
            if status != "in progress":
                break  # None: the id is too old for the server to remember
            await asyncio.sleep(_POLL_SECONDS)
    except Exception as exc:
        raise _unknown(what) from exc
    raise _unknown(what)


def _unknown(what: str) -> StoreCommitUnknownError:
    return StoreCommitUnknownError(
        f"PostgreSQL: the connection was lost while {what} was committing, and whether it "
        "committed could not be found out: it may or may not have been applied. Read the "
        "session before writing again."
    )
