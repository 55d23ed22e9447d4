"""Durable sessions: the ``Store`` protocol, its records, and the embedded stores.

``MemoryStore`` keeps everything in the process (tests, one-shot runs); ``SQLiteStore`` is the
embedded default (one file, WAL). Both pass the same contract suite, ``tests/store``.
"""

from __future__ import annotations

from helix_stream.store._memory import MemoryStore
from helix_stream.store._protocol import (
    Checkpoint,
    LogRecord,
    QueueEntry,
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
    "SQLiteStore",
    "SessionRecord",
    "SessionStatus",
    "Store",
]
