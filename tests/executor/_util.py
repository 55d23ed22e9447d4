"""Helpers for reading what the loopback server received, byte for byte."""

from __future__ import annotations

import itertools
import json
from typing import Any

import helix_stream as hs
from tests._store import pending_context


def messages_bytes(raw: bytes) -> bytes:
    """The exact bytes of the ``messages`` array inside a recorded request body."""
    start = raw.index(b'"messages":') + len(b'"messages":')
    text = raw[start:].decode()
    _, end = json.JSONDecoder().raw_decode(text)
    return text[:end].encode()


def assert_prefix_stable(requests: list[bytes]) -> None:
    """Every request's messages are a byte-identical prefix of the next request's."""
    arrays = [messages_bytes(r) for r in requests]
    for earlier, later in itertools.pairwise(arrays):
        assert later.startswith(earlier[:-1]), (earlier, later)


async def snapshot(store: hs.Store, session_id: str) -> tuple[Any, ...]:
    """Everything a store holds for a session (to prove a refusal wrote nothing)."""
    session = await store.get_session(session_id)
    if session is None:
        return (None, store.write_transactions)
    log = await store.read_log(session_id)
    pending = await pending_context(store, session_id)
    checkpoints = await store.checkpoints(session_id)
    return (session.status, log, pending, checkpoints, store.write_transactions)
