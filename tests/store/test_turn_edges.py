"""Every edge of ``TurnWrite``, on every store: one planner decides, so the stores cannot drift.

Creation with each ``expect``, each status transition, empty writes, a write after a rewind, a
key replay, a taken checkpoint id, a bad payload, and the order in which refusals are decided.
Each refusal also checks that nothing at all was written (``everything``).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, get_args

import pytest

from helix_stream.errors import ContextKeyConflictError, SessionNotFoundError
from helix_stream.store import (
    Checkpoint,
    NewSession,
    SessionStatus,
    Store,
    TurnWrite,
)
from tests._store import commit_context, create_session, delivered, pending_context
from tests.store.test_contract import STORES
from tests.store.test_turn_contract import SID, everything

APP: dict[str, Any] = {"type": "app"}
STATUSES: tuple[SessionStatus, ...] = get_args(SessionStatus)


@pytest.fixture(params=list(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = STORES[request.param](tmp_path)
    yield made
    await made.close()


def notice(text: str) -> dict[str, Any]:
    return {"kind": "notice", "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def checkpoint(cp_id: str = "", step_number: int = 0, **state: Any) -> Checkpoint:
    return Checkpoint(
        id=cp_id, session_id=SID, step_number=step_number, log_seq=0, state=state, created_at=0
    )


def full_write(**overrides: Any) -> TurnWrite:
    """A write with every part: create, status, meta, messages, the queue, rows, a checkpoint."""
    parts: dict[str, Any] = {
        "create": NewSession(agent_name="made", parent_id="p", meta={"m": 1}),
        "status": "paused",
        "meta": {"turns": 1},
        "messages": [user("hi")],
        "deliver_queue": True,
        "rows": [{**notice("hook"), "source": "hook"}],
        "checkpoint": checkpoint("cp-1", slots={"a": 1}),
    }
    return TurnWrite(**{**parts, **overrides})


# -- create, with each expect ----------------------------------------------------------------

EXPECTS: list[Any] = [
    pytest.param(None, id="none"),
    pytest.param(("idle",), id="idle"),
    pytest.param(("idle", "running"), id="idle-running"),
    pytest.param(("running",), id="running"),
    pytest.param(("paused",), id="paused"),
    pytest.param(("failed",), id="failed"),
    pytest.param(("running", "paused", "failed"), id="all-but-idle"),
    pytest.param((), id="empty"),
]


@pytest.mark.parametrize("expect", EXPECTS)
async def test_a_create_applies_only_when_expect_admits_the_new_sessions_idle(
    store: Store, expect: tuple[SessionStatus, ...] | None
) -> None:
    # The parts apply in field order: the session is created idle, then expect is compared.
    result = await store.write_turn(SID, full_write(expect=expect))
    if expect is None or "idle" in expect:
        assert result.applied
        assert (result.session.status, result.session.meta) == ("paused", {"m": 1, "turns": 1})
        assert [(r.seq, r.role) for r in result.records] == [(1, "user"), (2, "context")]
        assert await store.get_session(SID) == result.session
        [cp] = await store.checkpoints(SID)
        assert (cp.id, cp.log_seq, cp.state) == ("cp-1", 2, {"slots": {"a": 1}})
        assert store.write_transactions == 1
        return
    # Not applied: nothing is written, not even the session; the result shows the record the
    # create would have made.
    assert (result.applied, result.records) == (False, [])
    made = result.session
    assert (made.id, made.agent_name, made.parent_id, made.status, made.meta) == (
        SID, "made", "p", "idle", {"m": 1},
    )  # fmt: skip
    assert await store.get_session(SID) is None
    assert await everything(store) == (None, 0)


async def test_a_create_on_an_existing_session_is_ignored_and_expect_sees_its_status(
    store: Store,
) -> None:
    existing = await create_session(store, SID, agent_name="first", meta={"k": 1})
    await store.set_status(SID, "running")
    before = await everything(store)
    create = NewSession(agent_name="second", parent_id="x", meta={"other": 2})
    refused = await store.write_turn(SID, TurnWrite(create=create, expect=["idle"], status="idle"))
    assert (refused.applied, refused.session.status) == (False, "running")
    assert await everything(store) == before
    result = await store.write_turn(
        SID, TurnWrite(create=create, expect=["running"], status="idle")
    )
    assert result.applied
    session = result.session
    assert (session.agent_name, session.parent_id, session.meta) == ("first", None, {"k": 1})
    assert (session.status, session.created_at) == ("idle", existing.created_at)


# -- each status transition ------------------------------------------------------------------


@pytest.mark.parametrize("before", STATUSES)
@pytest.mark.parametrize("after", STATUSES)
async def test_every_status_may_follow_every_status_under_a_matching_expect(
    store: Store, before: SessionStatus, after: SessionStatus
) -> None:
    await create_session(store, SID)
    await store.write_turn(SID, TurnWrite(status=before))
    writes = store.write_transactions
    result = await store.write_turn(SID, TurnWrite(expect=[before], status=after))
    assert (result.applied, result.session.status) == (True, after)
    assert await store.get_session(SID) == result.session
    assert store.write_transactions == writes + 1  # the same status again is still a write
    # Any expect that leaves out the current status refuses, and writes nothing.
    state = await everything(store)
    others = [status for status in STATUSES if status != after]
    refused = await store.write_turn(SID, TurnWrite(expect=others, status=before, meta={"x": 1}))
    assert (refused.applied, refused.session) == (False, result.session)
    assert await everything(store) == state


# -- empty writes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(TurnWrite(), id="nothing"),
        pytest.param(TurnWrite(expect=["idle"]), id="a-holding-expect-only"),
        pytest.param(TurnWrite(meta={}), id="an-empty-patch"),
        pytest.param(TurnWrite(meta={"k": 1, "absent": None}), id="a-patch-that-changes-nothing"),
        pytest.param(TurnWrite(messages=[], rows=[]), id="no-messages-no-rows"),
        pytest.param(TurnWrite(deliver_queue=True), id="an-empty-queue"),
        pytest.param(
            TurnWrite(create=NewSession(agent_name="other", meta={"z": 1})), id="an-ignored-create"
        ),
    ],
)
async def test_a_write_that_changes_nothing_is_applied_and_writes_nothing(
    store: Store, write: TurnWrite
) -> None:
    await create_session(store, SID, meta={"k": 1})
    before = await everything(store)
    result = await store.write_turn(SID, write)
    assert (result.applied, result.records) == (True, [])
    assert result.session == before[0]  # updated_at too: nothing was touched
    assert await everything(store) == before


async def test_a_create_alone_makes_an_empty_idle_session_in_one_write(store: Store) -> None:
    result = await store.write_turn(SID, TurnWrite(create=NewSession(agent_name="a")))
    assert (result.applied, result.records, result.session.status) == (True, [], "idle")
    assert result.session.created_at == result.session.updated_at > 0
    snap = await store.read_snapshot(SID)
    assert (snap.session, snap.log, snap.checkpoint, snap.pending) == (result.session, [], None, [])
    assert store.write_transactions == 1


async def test_an_empty_write_to_a_missing_session_is_not_found(store: Store) -> None:
    with pytest.raises(SessionNotFoundError):
        await store.write_turn(SID, TurnWrite())
    assert await everything(store) == (None, 0)


# -- after a rewind, a key replay ------------------------------------------------------------


async def test_a_write_after_a_rewind_continues_at_the_cut_and_redelivers_once(
    store: Store,
) -> None:
    await create_session(store, SID)
    await store.write_turn(
        SID, TurnWrite(messages=[user("1"), user("2")], checkpoint=checkpoint("a"))
    )
    await store.enqueue_context(SID, [notice("q")], source="app", origin=APP, key="k")
    [entry] = await pending_context(store, SID)
    await store.write_turn(
        SID, TurnWrite(messages=[user("3")], deliver_queue=True, checkpoint=checkpoint("b"))
    )
    assert await delivered(store, SID) == {entry.id: 4}
    await store.rewind(SID, 2)
    # The cut's seqs and checkpoint id are free again; the entry is delivered once more, after
    # this write's messages.
    result = await store.write_turn(
        SID, TurnWrite(messages=[user("3 again")], deliver_queue=True, checkpoint=checkpoint("b"))
    )
    assert [(r.seq, r.role, r.payload.get("content")) for r in result.records] == [
        (3, "user", "3 again"), (4, "context", "q"),
    ]  # fmt: skip
    assert [(cp.id, cp.log_seq) for cp in await store.checkpoints(SID)] == [("a", 2), ("b", 4)]
    assert await delivered(store, SID) == {entry.id: 4}
    assert await commit_context(store, SID) == []


async def test_a_key_replay_records_nothing_and_its_items_are_delivered_once(
    store: Store,
) -> None:
    await create_session(store, SID)
    items = [notice("once")]
    assert await store.enqueue_context(SID, items, source="app", origin=APP, key="k") == 1
    [row] = (await store.write_turn(SID, TurnWrite(deliver_queue=True))).records
    before = await everything(store)
    assert await store.enqueue_context(SID, items, source="app", origin=APP, key="k") == 0
    assert (await store.write_turn(SID, TurnWrite(deliver_queue=True))).records == []
    with pytest.raises(ContextKeyConflictError):
        await store.enqueue_context(SID, [notice("other")], source="app", origin=APP, key="k")
    assert await everything(store) == before
    # A rewind that cuts its row delivers it again, once; the key still answers 0.
    await store.rewind(SID, 0)
    assert await store.enqueue_context(SID, items, source="app", origin=APP, key="k") == 0
    [again] = (await store.write_turn(SID, TurnWrite(deliver_queue=True))).records
    assert (again.seq, again.payload) == (row.seq, row.payload)
    assert (await store.write_turn(SID, TurnWrite(deliver_queue=True))).records == []


# -- refusals --------------------------------------------------------------------------------


async def test_a_taken_checkpoint_id_refuses_the_whole_write(store: Store) -> None:
    await create_session(store, SID, meta={"k": 1})
    await store.write_turn(SID, TurnWrite(messages=[user("q")], checkpoint=checkpoint("cp-1")))
    await store.enqueue_context(SID, [notice("q")], source="app", origin=APP)
    before = await everything(store)
    with pytest.raises(ValueError, match="checkpoint 'cp-1' already exists"):
        await store.write_turn(SID, full_write())
    assert await everything(store) == before


BAD_PARTS: list[Any] = [
    pytest.param({"create": NewSession(agent_name="a", meta={"x": math.nan})}, id="create-meta"),
    pytest.param({"meta": {"x": object()}}, id="meta"),
    pytest.param({"messages": [user("ok"), {"role": "tool", "content": math.inf}]}, id="message"),
    pytest.param({"messages": [user("ok"), {"content": "no role"}]}, id="message-role"),
    pytest.param({"rows": [notice("ok"), {"kind": "notice", "content": {1, 2}}]}, id="row"),
    pytest.param({"checkpoint": checkpoint("cp-9", x=math.nan)}, id="checkpoint-state"),
    pytest.param({"status": "bogus"}, id="status"),
    pytest.param({"expect": "idle"}, id="expect-string"),
]


@pytest.mark.parametrize("bad", BAD_PARTS)
@pytest.mark.parametrize("exists", [True, False], ids=["existing", "new"])
async def test_a_bad_part_rolls_back_the_whole_write(
    store: Store, bad: dict[str, Any], exists: bool
) -> None:
    if exists:
        await create_session(store, SID)
        await store.enqueue_context(SID, [notice("queued")], source="app", origin=APP)
    before = await everything(store)
    with pytest.raises((TypeError, ValueError)):
        await store.write_turn(SID, full_write(**bad))
    assert await everything(store) == before


async def test_refusals_are_decided_in_one_order(store: Store) -> None:
    # 1. The write's shape, before the session is read: a bad payload to a missing session
    #    is a ValueError, not "not found".
    with pytest.raises(ValueError, match="role"):
        await store.write_turn(SID, TurnWrite(messages=[{"content": "x"}]))
    # 2. The session: a missing one without create is not found, whatever expect says.
    with pytest.raises(SessionNotFoundError):
        await store.write_turn(SID, TurnWrite(expect=["running"], checkpoint=checkpoint("c")))
    # 3. expect, before the checkpoint id: a failed compare-and-set is not an error.
    await create_session(store, SID)
    await store.write_turn(SID, TurnWrite(checkpoint=checkpoint("c")))
    before = await everything(store)
    result = await store.write_turn(SID, TurnWrite(expect=["running"], checkpoint=checkpoint("c")))
    assert result.applied is False
    # 4. Then the checkpoint id.
    with pytest.raises(ValueError, match="'c' already exists"):
        await store.write_turn(SID, TurnWrite(expect=["idle"], checkpoint=checkpoint("c")))
    assert await everything(store) == before
