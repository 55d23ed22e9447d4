"""A store that wraps another, written as a user who adds metrics would write it.

Every member of the ``Store`` protocol is delegated, one by one (no ``__getattr__``), and each
call is counted by name: what an app that times its store calls does.
``tests/store/test_features.py`` checks that it names every member of the protocol, so it
grows with the protocol.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from helix_stream.store import (
    CallLedger,
    Checkpoint,
    LogRecord,
    RewindResult,
    SessionRecord,
    SessionStatus,
    SignInTable,
    Snapshot,
    Store,
    StreamLog,
    TokenTable,
    TurnWrite,
    TurnWriteResult,
)


class MeteredStore:
    """``inner``, with a count of the calls made to it (``calls``)."""

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    @property
    def write_transactions(self) -> int:
        return self.inner.write_transactions

    @property
    def lease_seconds(self) -> float:
        return self.inner.lease_seconds

    @property
    def lease_renew_seconds(self) -> float:
        return self.inner.lease_renew_seconds

    @property
    def sign_in_table(self) -> SignInTable | None:
        return self.inner.sign_in_table

    @property
    def token_table(self) -> TokenTable | None:
        return self.inner.token_table

    @property
    def stream_log(self) -> StreamLog | None:
        return self.inner.stream_log

    @property
    def call_ledger(self) -> CallLedger | None:
        return self.inner.call_ledger

    async def get_session(self, session_id: str) -> SessionRecord | None:
        self.calls["get_session"] += 1
        return await self.inner.get_session(session_id)

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        self.calls["set_status"] += 1
        return await self.inner.set_status(session_id, status, expect=expect)

    async def read_log(self, session_id: str, *, after_seq: int = 0) -> list[LogRecord]:
        self.calls["read_log"] += 1
        return await self.inner.read_log(session_id, after_seq=after_seq)

    async def enqueue_context(
        self,
        session_id: str,
        items: Sequence[dict[str, Any]],
        *,
        source: str,
        origin: Mapping[str, Any],
        key: str | None = None,
        on_key_conflict: Literal["raise", "ignore"] = "raise",
    ) -> int:
        self.calls["enqueue_context"] += 1
        return await self.inner.enqueue_context(
            session_id, items, source=source, origin=origin, key=key,
            on_key_conflict=on_key_conflict,
        )  # fmt: skip

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        self.calls["checkpoints"] += 1
        return await self.inner.checkpoints(session_id)

    async def last_seq(self, session_id: str) -> int:
        self.calls["last_seq"] += 1
        return await self.inner.last_seq(session_id)

    async def update_session_meta(self, session_id: str, patch: Mapping[str, Any]) -> SessionRecord:
        self.calls["update_session_meta"] += 1
        return await self.inner.update_session_meta(session_id, patch)

    async def rewind(self, session_id: str, to_seq: int) -> RewindResult:
        self.calls["rewind"] += 1
        return await self.inner.rewind(session_id, to_seq)

    async def branch(
        self, source_id: str, new_id: str, *, upto_seq: int, agent_name: str | None = None
    ) -> SessionRecord:
        self.calls["branch"] += 1
        return await self.inner.branch(source_id, new_id, upto_seq=upto_seq, agent_name=agent_name)

    async def read_snapshot(self, session_id: str) -> Snapshot:
        self.calls["read_snapshot"] += 1
        return await self.inner.read_snapshot(session_id)

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        self.calls["write_turn"] += 1
        return await self.inner.write_turn(session_id, write)

    async def close(self) -> None:
        await self.inner.close()


class NoFeatures(MeteredStore):
    """A store that keeps sessions but none of the features' tables (as a store written for
    sessions alone would)."""

    @property
    def sign_in_table(self) -> SignInTable | None:
        return None

    @property
    def token_table(self) -> TokenTable | None:
        return None

    @property
    def stream_log(self) -> StreamLog | None:
        return None

    @property
    def call_ledger(self) -> CallLedger | None:
        return None
