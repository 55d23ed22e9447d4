"""Durable sessions: the ``Store`` protocol, its records, and the embedded stores.

``MemoryStore`` keeps everything in the process (tests, one-shot runs); ``SQLiteStore`` is the
embedded default (one file, WAL). Both pass the same contract suite, ``tests/store``.

Besides appending, a store can cut a session back (``Store.rewind``, which redelivers or drops
the queue entries whose rows it removed) and copy a prefix of one into a new session
(``Store.branch``), as reference 000 "Rewinds and branches" describes.
"""

from __future__ import annotations

from helix_stream.store._memory import MemoryStore
from helix_stream.store._protocol import (
    Checkpoint,
    LogRecord,
    QueueEntry,
    RewindResult,
    SessionRecord,
    SessionStatus,
    Store,
)
from helix_stream.store._sqlite import SQLiteStore

__all__ = [
    "Checkpoint",
    "LogRecord",
    "MemoryStore",
    "QueueEntry",
    "RewindResult",
    "SQLiteStore",
    "SessionRecord",
    "SessionStatus",
    "Store",
]
