"""The Store contract for the turn calls, ``read_snapshot`` and ``write_turn``, on every store."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from helix_stream.errors import SessionNotFoundError
from helix_stream.store import Checkpoint, NewSession, Store, TurnWrite
from tests._store import create_session, pending_context
from tests.store.test_contract import STORES


@pytest.fixture(params=list(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = STORES[request.param](tmp_path)
    yield made
    await made.close()


SID = "turns-1"
APP: dict[str, Any] = {"type": "app"}


def checkpoint(step_number: int = 0, state: dict[str, Any] | None = None) -> Checkpoint:
    return Checkpoint(
        id="", session_id=SID, step_number=step_number, log_seq=0, state=state or {}, created_at=0
    )


async def everything(store: Store, session_id: str = SID) -> tuple[Any, ...]:
    """All a store holds for a session, and its write counter (to prove nothing changed)."""
    snap = await store.read_snapshot(session_id)
    if snap.session is None:
        return (None, store.write_transactions)
    return (
        snap.session,
        snap.log,
        await store.checkpoints(session_id),
        await pending_context(store, session_id),
        store.write_transactions,
    )


async def test_a_snapshot_of_no_session_is_empty(store: Store) -> None:
    snap = await store.read_snapshot("nobody")
    assert (snap.session, snap.log, snap.checkpoint, snap.pending) == (None, [], None, [])


async def test_the_first_write_creates_claims_and_appends_in_order(store: Store) -> None:
    await create_session(store, "other", agent_name="x")  # another session is untouched
    await store.enqueue_context(
        "other", [{"kind": "notice", "content": "theirs"}], source="app", origin=APP
    )
    result = await store.write_turn(
        SID,
        TurnWrite(
            create=NewSession(agent_name="agent", parent_id="p", meta={"helix.turn": {"turns": 1}}),
            expect=("idle", "paused", "failed"),
            status="running",
            messages=[{"role": "user", "content": "hi"}],
            deliver_queue=True,
            rows=[{"kind": "notice", "content": "hook", "source": "hook"}],
        ),
    )
    assert result.applied
    assert (result.session.status, result.session.agent_name, result.session.parent_id) == (
        "running", "agent", "p",
    )  # fmt: skip
    assert result.session.meta == {"helix.turn": {"turns": 1}}
    assert [(r.seq, r.role) for r in result.records] == [(1, "user"), (2, "context")]
    snap = await store.read_snapshot(SID)
    assert snap.log == result.records and snap.session == result.session
    assert len(await pending_context(store, "other")) == 1


async def test_queue_rows_come_after_the_messages_and_before_the_extra_rows(store: Store) -> None:
    await create_session(store, SID, agent_name="a")
    await store.enqueue_context(
        SID,
        [{"kind": "notice", "content": "q1"}, {"kind": "notice", "content": "q2"}],
        source="app",
        origin=APP,
        key="k",
    )
    result = await store.write_turn(
        SID,
        TurnWrite(
            messages=[{"role": "user", "content": "u"}],
            deliver_queue=True,
            rows=[{"kind": "memory", "memories": [], "source": "memory"}],
            checkpoint=checkpoint(state={"slots": {"a": 1}}),
        ),
    )
    payloads = [(r.role, r.payload.get("content")) for r in result.records]
    assert payloads == [("user", "u"), ("context", "q1"), ("context", "q2"), ("context", None)]
    assert result.records[1].payload["origin"]["key"] == "k"
    assert await pending_context(store, SID) == []
    snap = await store.read_snapshot(SID)
    assert snap.checkpoint is not None
    assert (snap.checkpoint.log_seq, snap.checkpoint.state) == (4, {"slots": {"a": 1}})


async def test_a_failed_compare_and_set_writes_nothing(store: Store) -> None:
    await create_session(store, SID, agent_name="a")
    await store.set_status(SID, "running")
    await store.enqueue_context(SID, [{"kind": "notice", "content": "q"}], source="app", origin=APP)
    before = await everything(store)
    result = await store.write_turn(
        SID,
        TurnWrite(
            expect=("idle",),
            status="running",
            meta={"x": 1},
            messages=[{"role": "user", "content": "u"}],
            deliver_queue=True,
            checkpoint=checkpoint(),
        ),
    )
    assert (result.applied, result.records, result.session.status) == (False, [], "running")
    assert await everything(store) == before


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(TurnWrite(messages=[{"role": "user", "content": math.nan}]), id="nan-message"),
        pytest.param(TurnWrite(messages=[{"content": "no role"}]), id="no-role"),
        pytest.param(TurnWrite(status="bogus"), id="unknown-status"),  # type: ignore[arg-type]
        pytest.param(TurnWrite(meta={"x": object()}), id="meta-not-json"),
        pytest.param(
            TurnWrite(messages=[{"role": "user", "content": "ok"}], rows=[{"bad": {1, 2}}]),
            id="bad-row-after-good-message",
        ),
    ],
)
async def test_a_bad_write_raises_and_writes_nothing(store: Store, write: TurnWrite) -> None:
    await create_session(store, SID, agent_name="a")
    await store.enqueue_context(SID, [{"kind": "notice", "content": "q"}], source="app", origin=APP)
    before = await everything(store)
    with pytest.raises((TypeError, ValueError)):
        await store.write_turn(SID, write)
    assert await everything(store) == before


async def test_a_write_to_a_missing_session_without_create_is_not_found(store: Store) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.write_turn(SID, TurnWrite(status="idle"))
    assert await everything(store) == (None, 0)


async def test_a_write_that_changes_nothing_is_not_counted(store: Store) -> None:
    await create_session(store, SID, agent_name="a", meta={"k": 1})
    before = await everything(store)
    result = await store.write_turn(SID, TurnWrite(deliver_queue=True, meta={"k": 1}))
    assert result.applied and result.records == []
    assert await everything(store) == before


async def test_two_claims_racing_for_one_session_one_wins(store: Store) -> None:
    await create_session(store, SID, agent_name="a")
    claims = [
        TurnWrite(
            expect=("idle",), status="running", messages=[{"role": "user", "content": str(i)}]
        )
        for i in range(8)
    ]
    results = await asyncio.gather(*(store.write_turn(SID, w) for w in claims))
    assert sum(r.applied for r in results) == 1
    assert len((await store.read_snapshot(SID)).log) == 1


async def test_two_creators_of_one_new_session_one_wins(store: Store) -> None:
    claims = [
        TurnWrite(
            create=NewSession(agent_name=f"a{i}"),
            expect=("idle",),
            status="running",
            messages=[{"role": "user", "content": str(i)}],
        )
        for i in range(4)
    ]
    results = await asyncio.gather(*(store.write_turn(SID, w) for w in claims))
    assert sum(r.applied for r in results) == 1
    snap = await store.read_snapshot(SID)
    assert snap.session is not None and snap.session.status == "running"
    assert len(snap.log) == 1


async def test_the_snapshot_has_the_last_checkpoint_and_the_pending_queue(store: Store) -> None:
    await create_session(store, SID, agent_name="a")
    for n in range(3):
        await store.write_turn(
            SID,
            TurnWrite(
                messages=[{"role": "assistant", "content": f"{n}"}], checkpoint=checkpoint(n)
            ),
        )
    await store.enqueue_context(
        SID, [{"kind": "notice", "content": "later"}], source="app", origin=APP
    )
    snap = await store.read_snapshot(SID)
    assert snap.checkpoint is not None and snap.checkpoint.step_number == 2
    assert [e.items for e in snap.pending] == [[{"kind": "notice", "content": "later"}]]
    assert [r.payload["content"] for r in snap.log] == ["0", "1", "2"]
