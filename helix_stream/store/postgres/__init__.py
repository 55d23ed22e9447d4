"""PostgresStore, cut like ``store.sqlite``: ``_db`` (the pool and transactions, with
``_retry`` after a lost connection), ``_schema`` (the migrations), ``_read`` (reads and the
planners' state, under the locks), ``_apply`` (the writes of a plan), ``_store`` (the methods:
lock and read the state, plan, apply). Beside the store, ``_streams`` keeps the chat server's
UI streams (:class:`PostgresStreamLog`, the store's ``stream_log``)."""

from __future__ import annotations

from helix_stream.store._features import StreamEvents
from helix_stream.store.postgres._store import PostgresStore
from helix_stream.store.postgres._streams import PostgresStreamLog

__all__ = ["PostgresStore", "PostgresStreamLog", "StreamEvents"]
