"""PostgresStore: the Store protocol in PostgreSQL, shared by every process that opens it.

The pool and the transaction wrapper (with its retry after a lost connection, ``_retry``) are
in ``_db``, the migrations in ``_schema``. Each method here is a read (``_read``) or one
``BEGIN … COMMIT`` that locks and reads the state (``_read``), asks the planner
(``helix_stream.store._plan``) and applies its plan (``_apply``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

from helix_stream._limits import check_session_id
from helix_stream.store._plan import (
    CheckedWrite,
    ContextRequest,
    plan_enqueue,
    plan_turn_write,
)
from helix_stream.store._plan_history import (
    plan_branch,
    plan_rewind,
)
from helix_stream.store._records import Checkpoint, LogRecord, RewindResult, SessionRecord
from helix_stream.store._shared import (
    checkpoints_from_rows,
    log_from_rows,
    session_not_found,
)
from helix_stream.store._turns import Snapshot, TurnWriteResult
from helix_stream.store._writes import StoreWrites
from helix_stream.store.postgres import _apply, _read
from helix_stream.store.postgres._auth import PostgresAuthTables
from helix_stream.store.postgres._db import PostgresDatabase, Tx
from helix_stream.store.postgres._streams import PostgresStreamLog

__all__ = ["PostgresStore"]


class PostgresStore(StoreWrites, PostgresDatabase):
    """A :class:`~helix_stream.store.Store` in PostgreSQL, for several processes or machines.

    Every replica that opens the same database and schema sees the same sessions: an
    ``add_context`` on one reaches a run on another at its next model call. The schema is
    created (and migrated) on first use; docs/postgres.md describes it. Needs the
    ``helix-stream[postgres]`` extra (psycopg 3 and psycopg_pool), imported only here.

    Args:
        dsn: A libpq connection string or URL (``postgresql://user@host:5432/db``).
        schema: The schema the tables live in (a plain identifier).
        min_size: Connections the pool keeps open.
        max_size: Connections the pool opens at most.
        timeout: Seconds a call waits for a free connection of the pool.
        application_name: What the connections report to the server (``pg_stat_activity``);
            default: the DSN's, else ``helix_stream:<schema>``.
        max_queued_items: The most undelivered context items a session's queue may hold; an
            ``enqueue_context`` that would pass it is refused whole.
        lease_seconds: How long a running turn's lease lasts unless renewed: a session whose
            process died is taken over by the next turn once it ends (README, "Reliability
            notes"; default 10).
        lease_renew_seconds: How often a running turn renews its lease (default 3; at most
            half of ``lease_seconds``).

    Attributes:
        write_transactions: Count of write transactions this object committed. Calls that
            changed nothing (an existing session, a failed compare-and-set, a key dedupe, an
            empty commit, a rewind to the last seq) roll back and are not counted; neither is
            a migration.

    A call whose pooled connection turned out dead (a server restart, a failover) runs once
    more on a fresh one; a write only when its first try cannot have committed (README,
    "Reliability notes"; docs/postgres.md, "Lost connections").

    The features' tables live in the same schema: ``sign_in_table`` (``auth_pending``),
    ``token_table`` (``auth_tokens``) and ``stream_log`` (``ui_streams``,
    ``ui_stream_events``: a client reconnecting to any process resumes its turn's stream).

    Raises:
        FrameworkNotSupportedError: psycopg is not installed.

    Example::

        store = hs.PostgresStore("postgresql://app@db:5432/chat")  # several processes or machines
        executor = hs.Executor(store=store)
    """

    @cached_property
    def sign_in_table(self) -> PostgresAuthTables:
        return PostgresAuthTables(self)

    @property
    def token_table(self) -> PostgresAuthTables:
        return self.sign_in_table

    @cached_property
    def stream_log(self) -> PostgresStreamLog:
        return PostgresStreamLog(self)

    # -- reads -------------------------------------------------------------------------------

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        check_session_id(session_id)

        async def read(tx: Tx) -> SessionRecord | None:
            row = await tx.one(_read.SQL_SESSION, (session_id,))
            return None if row is None else _read.session_read(row)

        return await self._read(read, "get_session")

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        check_session_id(session_id)

        async def read(tx: Tx) -> list[LogRecord]:
            params = (after_seq, session_id)
            return log_from_rows(await tx.all_of_session(_read.SQL_READ_LOG, session_id, params))

        return await self._read(read, "read_log")

    async def last_seq(self, session_id: str) -> int:
        """The seq of the last log record; 0 when the log is empty."""
        check_session_id(session_id)

        async def read(tx: Tx) -> int:
            row = await tx.one("SELECT last_seq FROM {s}.sessions WHERE id = %s", (session_id,))
            if row is None:
                raise session_not_found(session_id)
            return int(row[0])

        return await self._read(read, "last_seq")

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        check_session_id(session_id)

        async def read(tx: Tx) -> list[Checkpoint]:
            rows = await tx.all_of_session(_read.SQL_CHECKPOINTS, session_id, (session_id,))
            return checkpoints_from_rows(session_id, rows)

        return await self._read(read, "checkpoints")

    async def read_snapshot(self, session_id: str) -> Snapshot:
        """The session, its log, its last checkpoint and its queue, as of one moment."""
        check_session_id(session_id)

        async def read(tx: Tx) -> Snapshot:
            # One REPEATABLE READ transaction, its reads pipelined: one view, ~one round trip.
            async with tx.conn.pipeline(), tx.conn.transaction():
                return await _read.snapshot(tx, session_id)

        return await self._read(read, "read_snapshot")

    # -- writes: lock and read the state, plan, apply ------------------------------------------

    async def _write_turn(self, session_id: str, checked: CheckedWrite) -> TurnWriteResult:
        """One transaction, pipelined: the session row's lock and the reads of the state go
        out in one round trip (so a compare-and-set sees the newest committed status, across
        processes, and the queue it delivers is every entry committed before it), the writes
        with ``COMMIT``."""

        async def tx(tx: Tx) -> tuple[TurnWriteResult, bool]:
            state = await _read.turn_state(tx, session_id, checked)
            plan = plan_turn_write(state, checked)
            if plan.changed:
                await _apply.apply_turn(tx, plan)
            return plan.result(), plan.changed

        return await self._write(tx, "write_turn", pipeline=True)

    async def _enqueue(self, session_id: str, request: ContextRequest) -> int:
        """One transaction under the session's enqueue lock, never its row lock: it never
        waits for a context pass in progress."""

        async def tx(tx: Tx) -> tuple[int, bool]:
            state = await _read.enqueue_state(tx, session_id, request, self.max_queued_items)
            plan = plan_enqueue(state, request)
            if not plan.insert:
                return plan.recorded, False
            if await _apply.apply_enqueue(tx, session_id, request):
                return plan.recorded, True
            # Another writer's claim of the key won (its ON CONFLICT waited for it): judge the
            # items it was claimed with, as a retry of that request is judged — 0, or the
            # conflict the planner raises.
            row = await tx.one(_read.SQL_KEY, (session_id, request.key))
            plan_enqueue(replace(state, key_digest=None if row is None else row[0]), request)
            return 0, False

        return await self._write(tx, "enqueue_context")

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        """Truncate the log after ``to_seq`` and fix checkpoints and queue (see ``Store``)."""
        check_session_id(session_id)

        async def tx(tx: Tx) -> tuple[RewindResult, bool]:
            plan = plan_rewind(await _read.rewind_state(tx, session_id, to_seq), to_seq)
            if plan.changed:
                await _apply.apply_rewind(tx, session_id, plan)
            return plan.result, plan.changed

        return await self._write(tx, "rewind", pipeline=True)

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        """Make ``new_id`` from ``source_id``'s log and checkpoints up to ``upto_seq``."""
        check_session_id(source_id)
        check_session_id(new_id)

        async def tx(tx: Tx) -> tuple[SessionRecord, bool]:
            state = await _read.branch_state(tx, source_id, new_id)
            record = plan_branch(state, new_id, upto_seq=upto_seq, agent_name=agent_name)
            await _apply.apply_branch(tx, source_id, record, upto_seq)
            return record, True

        return await self._write(tx, "branch")
