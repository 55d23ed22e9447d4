"""Durable sessions: the ``Store`` protocol, its records, and the stores.

``MemoryStore`` keeps everything in the process (tests, one-shot runs); ``SQLiteStore`` is the
embedded default (one file, WAL); ``PostgresStore`` lets several processes or machines share
sessions (install ``helix-stream[postgres]``; psycopg is imported only when one is made).
All three pass the same contract suite, ``tests/store``. :func:`open_store` picks one from a
URL or path.

Besides appending, a store can cut a session back (``Store.rewind``, which redelivers or drops
the queue entries whose rows it removed) and copy a prefix of one into a new session
(``Store.branch``), as the README's "Durable sessions" describes.

A store also hands out what features keep beside the sessions (``_features``: pending
sign-ins, token rows, the shared UI stream log), through the protocol, so that a store that
wraps another keeps them.

Layout: ``_protocol`` (the protocol and its records), ``_features`` (the features' tables,
implemented in ``_auth`` and ``postgres/_streams``), ``_turns`` (``Snapshot``, ``TurnWrite``),
``_plan`` and ``_plan_history`` (every decision, once: the planners), ``_shared`` (encoding,
checks, refusal texts), ``_writes`` (the write methods every store shares: argument checks,
``set_status`` and ``update_session_meta`` as turn writes); the backends ``_memory``,
``sqlite/`` and ``postgres/`` only read state and apply plans (docs/architecture.md, "The
store: planners and backends").
"""

from __future__ import annotations

import os

from helix_stream.store._features import (
    PendingRow,
    SignInTable,
    StreamEvents,
    StreamLog,
    TokenTable,
)
from helix_stream.store._memory import MemoryStore
from helix_stream.store._protocol import Store
from helix_stream.store._records import (
    Checkpoint,
    LogRecord,
    QueueEntry,
    RewindResult,
    SessionRecord,
    SessionStatus,
)
from helix_stream.store._turns import Lease, NewSession, Snapshot, TurnWrite, TurnWriteResult
from helix_stream.store.postgres import PostgresStore
from helix_stream.store.sqlite import SQLiteStore

__all__ = [
    "Checkpoint",
    "Lease",
    "LogRecord",
    "MemoryStore",
    "NewSession",
    "PendingRow",
    "PostgresStore",
    "QueueEntry",
    "RewindResult",
    "SQLiteStore",
    "SessionRecord",
    "SessionStatus",
    "SignInTable",
    "Snapshot",
    "Store",
    "StreamEvents",
    "StreamLog",
    "TokenTable",
    "TurnWrite",
    "TurnWriteResult",
    "open_store",
]


def open_store(url_or_path: str | os.PathLike[str]) -> Store:
    """The store a URL or path names.

    ``postgres://…`` or ``postgresql://…`` → :class:`PostgresStore` (schema ``helix``);
    ``":memory:"`` → :class:`MemoryStore`; anything else → :class:`SQLiteStore` on that file.

    Raises:
        FrameworkNotSupportedError: a PostgreSQL URL without ``helix-stream[postgres]``.

    Example::

        store = open_store(os.environ.get("HELIX_DATABASE", "helix.db"))   # a URL or a path
    """
    target = os.fspath(url_or_path)
    if target.startswith(("postgres://", "postgresql://")):
        return PostgresStore(target)
    if target == ":memory:":
        return MemoryStore()
    return SQLiteStore(target)
