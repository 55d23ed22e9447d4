"""SQLiteStore, cut like ``store.postgres``: ``_db`` (connections and transactions),
``_schema`` (the tables), ``_read`` (reads and the planners' state), ``_apply`` (the writes of
a plan), ``_store`` (the methods: read the state, plan, apply)."""

from __future__ import annotations

from helix_stream.store.sqlite._store import SQLiteStore

__all__ = ["SQLiteStore"]
