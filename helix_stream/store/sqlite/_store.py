"""SQLiteStore: the embedded default Store, on stdlib sqlite3 (WAL, one transaction per write).

The connections (on the event loop; a worker thread when the file is locked) and the
transaction wrapper are in ``_db``, the tables in ``_schema``. Each method here is a read
(``_read``) or one ``BEGIN IMMEDIATE … COMMIT`` that reads the state (``_read``), asks the
planner (``helix_stream.store._plan``) and applies its plan (``_apply``).
"""

from __future__ import annotations

import sqlite3
import time
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
from helix_stream.store._turns import Snapshot, TurnWriteResult
from helix_stream.store._writes import StoreWrites
from helix_stream.store.sqlite import _apply, _read
from helix_stream.store.sqlite._auth import SQLiteAuthTables
from helix_stream.store.sqlite._db import SQLiteDatabase

__all__ = ["SQLiteStore"]


class SQLiteStore(StoreWrites, SQLiteDatabase):
    """A :class:`~helix_stream.store.Store` in one SQLite file (or ``":memory:"``).

    Several ``SQLiteStore`` objects (or processes) may open the same file; each sees what the
    others committed. Call :meth:`close` when done: it closes the connections and stops the
    worker thread (which only serves calls that found the file locked).

    Args:
        path: The database file (created on first use), or ``":memory:"``.
        busy_timeout: Seconds a write waits for another connection's write lock.
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
            creating the schema.
        sign_in_table: The pending sign-ins (table ``auth_pending`` of the file).
        token_table: ``EncryptedTokenStore``'s rows (table ``auth_tokens``).
        stream_log: ``None``: a turn's UI stream is followed in the process that runs it.

    Example::

        executor = hs.Executor(store=hs.SQLiteStore("helix.db"))   # one machine, survives restarts
    """

    stream_log: None = None

    @cached_property
    def sign_in_table(self) -> SQLiteAuthTables:
        return SQLiteAuthTables(self)

    @property
    def token_table(self) -> SQLiteAuthTables:
        return self.sign_in_table

    # -- reads -------------------------------------------------------------------------------

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        check_session_id(session_id)
        return await self._run(lambda conn: _read.session(conn, session_id))

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        check_session_id(session_id)

        def read(conn: sqlite3.Connection) -> list[LogRecord]:
            _read.require_session(conn, session_id)
            return _read.read_log(conn, session_id, after_seq)

        return await self._run(read)

    async def last_seq(self, session_id: str) -> int:
        """The seq of the last log record; 0 when the log is empty."""
        check_session_id(session_id)

        def read(conn: sqlite3.Connection) -> int:
            _read.require_session(conn, session_id)
            return _read.last_seq(conn, session_id)

        return await self._run(read)

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        check_session_id(session_id)

        def read(conn: sqlite3.Connection) -> list[Checkpoint]:
            _read.require_session(conn, session_id)
            return _read.checkpoints(conn, session_id)

        return await self._run(read)

    async def read_snapshot(self, session_id: str) -> Snapshot:
        """The session, its log, its last checkpoint and its queue, in one read."""
        check_session_id(session_id)
        return await self._run(lambda conn: _read.snapshot(conn, session_id))

    # -- writes: read the state, plan, apply ---------------------------------------------------

    async def _write_turn(self, session_id: str, checked: CheckedWrite) -> TurnWriteResult:

        def tx(conn: sqlite3.Connection) -> tuple[TurnWriteResult, bool]:
            state = _read.turn_state(conn, session_id, checked, time.time())
            plan = plan_turn_write(state, checked)
            if plan.changed:
                _apply.apply_turn(conn, plan)
            return plan.result(), plan.changed

        return await self._write(tx)

    async def _enqueue(self, session_id: str, request: ContextRequest) -> int:

        def tx(conn: sqlite3.Connection) -> tuple[int, bool]:
            state = _read.enqueue_state(conn, session_id, request, self.max_queued_items)
            plan = plan_enqueue(state, request)
            if plan.insert:
                _apply.apply_enqueue(conn, session_id, request)
            return plan.recorded, plan.insert

        return await self._write(tx)

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        """Truncate the log after ``to_seq`` and fix checkpoints and queue (see ``Store``)."""
        check_session_id(session_id)

        def tx(conn: sqlite3.Connection) -> tuple[RewindResult, bool]:
            plan = plan_rewind(_read.rewind_state(conn, session_id, to_seq, time.time()), to_seq)
            if plan.changed:
                _apply.apply_rewind(conn, session_id, plan)
            return plan.result, plan.changed

        return await self._write(tx)

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        """Make ``new_id`` from ``source_id``'s log and checkpoints up to ``upto_seq``."""
        check_session_id(source_id)
        check_session_id(new_id)

        def tx(conn: sqlite3.Connection) -> tuple[SessionRecord, bool]:
            state = _read.branch_state(conn, source_id, new_id, time.time())
            record = plan_branch(state, new_id, upto_seq=upto_seq, agent_name=agent_name)
            _apply.apply_branch(conn, source_id, record, upto_seq)
            return record, True

        return await self._write(tx)
