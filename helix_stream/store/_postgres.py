"""PostgresStore: the Store protocol in PostgreSQL, shared by every process that opens it.

The pool, the transaction wrapper, the session lock and the log append are in ``_postgres_db``
(whose docstring explains the locking); the migrations in ``_postgres_schema``; the context
queue in ``_postgres_queue``; rewind and branch in ``_postgres_history``. This module is the
store itself: sessions, the log and checkpoints, each a read or one ``BEGIN … COMMIT``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal

from helix_stream._limits import check_key, check_session_id
from helix_stream.store import (
    _postgres_history,
    _postgres_queue,
    _postgres_streams,
    _postgres_turns,
)
from helix_stream.store._postgres_db import (
    SESSION_COLUMNS,
    PostgresDatabase,
    Tx,
    session_record,
)
from helix_stream.store._postgres_streams import StreamEvents
from helix_stream.store._protocol import (
    JSON,
    Checkpoint,
    LogRecord,
    QueueEntry,
    RewindResult,
    SessionRecord,
    SessionStatus,
)
from helix_stream.store._shared import (
    check_conflict_mode,
    check_expect,
    check_status,
    checkpoint_id,
    checkpoints_from_rows,
    decode,
    duplicate_checkpoint,
    encode,
    items_digest,
    merge_meta,
    message_role,
    session_not_found,
)
from helix_stream.store._turns import Snapshot, TurnWrite, TurnWriteResult

__all__ = ["PostgresStore"]

_SQL_READ_LOG = (
    "SELECT l.seq, l.role, l.payload, l.created_at FROM {s}.sessions s"
    " LEFT JOIN {s}.log l ON l.session_id = s.id AND l.seq > %s WHERE s.id = %s ORDER BY l.seq"
)
_SQL_CHECKPOINTS = (
    "SELECT c.id, c.step_number, c.log_seq, c.state, c.created_at FROM {s}.sessions s"
    " LEFT JOIN {s}.checkpoints c ON c.session_id = s.id WHERE s.id = %s ORDER BY c.ord"
)
_SQL_SESSION = f"SELECT {SESSION_COLUMNS} FROM {{s}}.sessions WHERE id = %s"


class PostgresStore(PostgresDatabase):
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

    Attributes:
        write_transactions: Count of write transactions this object committed. Calls that
            changed nothing (an existing session, a failed compare-and-set, a key dedupe, an
            empty commit, a rewind to the last seq) roll back and are not counted; neither is
            a migration.

    A call whose pooled connection turned out dead (a server restart, a failover) runs once
    more on a fresh one; a write only when its first try cannot have committed (README,
    "Reliability notes"; docs/postgres.md, "Lost connections").

    Raises:
        FrameworkNotSupportedError: psycopg is not installed.
    """

    async def create_session(
        self,
        session_id: str,
        *,
        agent_name: str,
        parent_id: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> SessionRecord:
        """Create the session if it does not exist; return it either way (never overwrites)."""
        check_session_id(session_id)
        meta_text = encode(dict(meta or {}))

        async def tx(tx: Tx) -> tuple[SessionRecord, bool]:
            now = time.time()
            # A concurrent creator of the same id makes ON CONFLICT wait, then skip; the
            # SELECT after it (a new snapshot) sees that creator's row.
            row = await tx.one(
                "INSERT INTO {s}.sessions (id, agent_name, status, parent_id, created_at,"
                " updated_at, meta) VALUES (%s, %s, 'idle', %s, %s, %s, %s)"
                f" ON CONFLICT (id) DO NOTHING RETURNING {SESSION_COLUMNS}",
                (session_id, agent_name, parent_id, now, now, meta_text),
            )
            if row is not None:
                return session_record(row), True
            existing = await tx.one(_SQL_SESSION, (session_id,))
            assert existing is not None  # sessions are never deleted by the protocol
            return session_record(existing), False

        return await self._write(tx, "create_session")

    async def get_session(self, session_id: str) -> SessionRecord | None:
        """The session, or ``None``."""
        check_session_id(session_id)

        async def read(tx: Tx) -> SessionRecord | None:
            row = await tx.one(_SQL_SESSION, (session_id,))
            return None if row is None else session_record(row)

        return await self._read(read, "get_session")

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status; with ``expect``, only if the current one is among them.

        The compare-and-set is one ``UPDATE … WHERE status = ANY(expect)``: a second caller
        waits for the first's row lock, then re-checks the condition against the row the
        first committed, so of two runners racing for a session exactly one wins.
        """
        check_session_id(session_id)
        check_status(status)
        expected = check_expect(expect)

        async def tx(tx: Tx) -> tuple[bool, bool]:
            if expected is None:
                count = await tx.execute(
                    "UPDATE {s}.sessions SET status = %s, updated_at = %s WHERE id = %s",
                    (status, time.time(), session_id),
                )
            else:
                count = await tx.execute(
                    "UPDATE {s}.sessions SET status = %s, updated_at = %s"
                    " WHERE id = %s AND status = ANY(%s)",
                    (status, time.time(), session_id, list(expected)),
                )
            if count == 0:
                await tx.require_session(session_id)
            return count == 1, count == 1

        return await self._write(tx, "set_status")

    async def update_session_meta(self, session_id: str, patch: Mapping[str, Any]) -> SessionRecord:
        """Merge ``patch`` into ``meta`` (``None`` removes a key); return the new record."""
        check_session_id(session_id)
        patch = dict(patch)

        async def tx(tx: Tx) -> tuple[SessionRecord, bool]:
            # Locked: two processes merging different keys must not lose one another's.
            record = session_record(await tx.lock_session(session_id, SESSION_COLUMNS))
            merged, changed = merge_meta(record.meta, patch)
            if not changed:
                return record, False
            row = await tx.one(
                "UPDATE {s}.sessions SET meta = %s, updated_at = %s WHERE id = %s"
                f" RETURNING {SESSION_COLUMNS}",
                (encode(merged), time.time(), session_id),
            )
            assert row is not None  # the row is locked
            return session_record(row), True

        return await self._write(tx, "update_session_meta")

    async def append_messages(
        self,
        session_id: str,
        messages: Sequence[JSON],
        *,
        checkpoint: Checkpoint | None = None,
    ) -> list[LogRecord]:
        """Append messages and, optionally, a checkpoint at the last seq, in one transaction."""
        check_session_id(session_id)
        rows = [(message_role(m), m) for m in messages]

        async def tx(tx: Tx) -> tuple[list[LogRecord], bool]:
            (seq,) = await tx.lock_session(session_id)
            if not rows and checkpoint is None:
                return [], False
            now = time.time()
            records = await tx.append(session_id, seq, rows, now) if rows else []
            if checkpoint is not None:
                cp_id = checkpoint_id(checkpoint.id)
                inserted = await tx.execute(
                    "INSERT INTO {s}.checkpoints (session_id, id, step_number, log_seq, state,"
                    " created_at) VALUES (%s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (session_id, id) DO NOTHING",
                    (
                        session_id,
                        cp_id,
                        checkpoint.step_number,
                        seq + len(records),
                        encode(checkpoint.state),
                        now,
                    ),
                )
                if not inserted:
                    raise duplicate_checkpoint(session_id, cp_id)
            return records, True

        return await self._write(tx, "append_messages")

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        """Log records with ``seq > after_seq``, in order."""
        check_session_id(session_id)

        async def read(tx: Tx) -> list[LogRecord]:
            rows = await tx.all_of_session(_SQL_READ_LOG, session_id, (after_seq, session_id))
            return [
                LogRecord(seq=seq, role=role, payload=decode(payload), created_at=at)
                for seq, role, payload, at in rows
            ]

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

    async def enqueue_context(
        self,
        session_id: str,
        items: Sequence[JSON],
        *,
        source: str,
        origin: Mapping[str, Any],
        key: str | None = None,
        on_key_conflict: Literal["raise", "ignore"] = "raise",
    ) -> int:
        """Queue items for the next context pass; return how many were recorded.

        Items with no key are always recorded. An empty ``items`` records nothing and
        returns 0 (it leaves no key behind either, since there was no request to remember).
        It never waits for a context pass in progress: it takes no session lock.
        """
        check_session_id(session_id)
        check_key(key)
        check_conflict_mode(on_key_conflict)
        params = {
            "items": encode(list(items)),
            "source": source,
            "key": key,
            "origin": encode(dict(origin)),
            "digest": items_digest(items) if key is not None else "",
        }
        return await self._write(
            lambda tx: _postgres_queue.enqueue(
                tx, session_id, len(items), params, on_key_conflict, self.max_queued_items
            ),
            "enqueue_context",
        )

    async def pending_context(self, session_id: str) -> list[QueueEntry]:
        """The queue entries not yet delivered, in id order."""
        check_session_id(session_id)
        return await self._queue(session_id, _postgres_queue.SQL_PENDING)

    async def delivered_context(self, session_id: str) -> list[QueueEntry]:
        """The queue entries already delivered, in id order."""
        check_session_id(session_id)
        return await self._queue(session_id, _postgres_queue.SQL_DELIVERED)

    async def _queue(self, session_id: str, sql: str) -> list[QueueEntry]:
        async def read(tx: Tx) -> list[QueueEntry]:
            return _postgres_queue.queue_entries(
                await tx.all_of_session(sql, session_id, (session_id,))
            )

        return await self._read(read, "a queue read")

    async def commit_context(
        self, session_id: str, extra_rows: Sequence[JSON] = ()
    ) -> list[LogRecord]:
        """Turn every queued entry, then ``extra_rows``, into context rows in one transaction.

        The session row's lock comes first: the read of the queue after it sees every entry
        committed so far, and no other pass of this session can take the same entries. An
        entry committed after that read stays queued for the next pass; none is lost and none
        is delivered twice.
        """
        check_session_id(session_id)
        write = TurnWrite(deliver_queue=True, rows=list(extra_rows))
        return (await self.write_turn(session_id, write)).records

    async def read_snapshot(self, session_id: str) -> Snapshot:
        """The session, its log, its last checkpoint and its queue, as of one moment."""

        check_session_id(session_id)

        async def read(tx: Tx) -> Snapshot:
            # One REPEATABLE READ transaction, its reads pipelined: one view, ~one round trip.
            async with tx.conn.pipeline(), tx.conn.transaction():
                return await _postgres_turns.read_snapshot(tx, session_id)

        return await self._read(read, "read_snapshot")

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        """Apply one turn boundary in one transaction (see :class:`~helix_stream.store.TurnWrite`).

        It starts with the session row's lock, like every append: a compare-and-set on the
        status there is decided against the newest committed row, across processes.
        """
        check_session_id(session_id)
        return await self._write(
            lambda tx: _postgres_turns.write_turn(tx, session_id, write),
            "write_turn",
            pipeline=True,
        )

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first."""
        check_session_id(session_id)

        async def read(tx: Tx) -> list[Checkpoint]:
            rows = await tx.all_of_session(_SQL_CHECKPOINTS, session_id, (session_id,))
            return checkpoints_from_rows(session_id, rows)

        return await self._read(read, "checkpoints")

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        """Truncate the log after ``to_seq`` and fix checkpoints and queue (see ``Store``)."""
        check_session_id(session_id)
        return await self._write(
            lambda tx: _postgres_history.rewind(tx, session_id, to_seq), "rewind"
        )

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        """Make ``new_id`` from ``source_id``'s log and checkpoints up to ``upto_seq``."""
        check_session_id(source_id)
        check_session_id(new_id)
        return await self._write(
            lambda tx: _postgres_history.branch(tx, source_id, new_id, upto_seq, agent_name),
            "branch",
        )

    # -- UI streams: resume on any process (helix_stream.server.SharedStreamRegistry) --------

    async def open_ui_stream(self, session_id: str, stream_id: str, *, keep_for: float) -> None:
        """Make ``stream_id`` the session's UI stream; drop streams finished ``keep_for`` s ago."""
        check_session_id(session_id)

        async def tx(tx: Tx) -> tuple[None, bool]:
            await _postgres_streams.open_stream(tx, session_id, stream_id, keep_for)
            return None, True

        await self._write(tx, "open_ui_stream", pipeline=True)

    async def append_ui_stream(
        self, stream_id: str, seq: int, events: str, *, finished: bool = False
    ) -> None:
        """Add a batch of SSE events to a UI stream (``finished``: its last) and notify."""
        notify = _postgres_streams.channel(self.schema)

        async def tx(tx: Tx) -> tuple[None, bool]:
            await _postgres_streams.append(
                tx, stream_id, seq, events, finished=finished, notify=notify
            )
            return None, True

        await self._write(tx, "append_ui_stream", pipeline=True)

    async def read_ui_stream(
        self, session_id: str, after_seq: int = 0, stream_id: str | None = None
    ) -> StreamEvents:
        """The session's latest UI stream after batch ``after_seq`` (see ``StreamEvents``)."""
        check_session_id(session_id)
        return await self._read(
            lambda tx: _postgres_streams.read(tx, session_id, after_seq, stream_id),
            "read_ui_stream",
        )

    async def listen_ui_streams(self) -> AsyncIterator[str]:
        """The ids of UI streams as they grow, from every process (a connection of its own,
        ``LISTEN`` on the schema's channel), until the iterator is closed."""
        self._check_open()
        conn = await self._psycopg.AsyncConnection.connect(self._dsn, **self._connect_kwargs)
        async with conn:
            await conn.execute(f'LISTEN "{_postgres_streams.channel(self.schema)}"')
            async for note in conn.notifies():
                yield note.payload
