"""The Store contract: one suite every store passes.

Every test takes the ``store`` fixture, parametrized over the implementations; a new store
joins by adding a param to that fixture. Tests that need a file on disk or SQLite itself
(reopening, two connections, the worker thread, query plans) are at the end, SQLite only.
"""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import helix_stream.store as store_pkg
from helix_stream.errors import (
    ContextKeyConflictError,
    ContextValidationError,
    InvalidRequestError,
    SessionNotFoundError,
    StateError,
)
from helix_stream.store import (
    Checkpoint,
    LogRecord,
    MemoryStore,
    NewSession,
    PostgresStore,
    QueueEntry,
    RewindResult,
    SessionRecord,
    SQLiteStore,
    Store,
    TurnWrite,
)
from helix_stream.store.sqlite._apply import SQL_COPY_CHECKPOINTS, SQL_COPY_LOG
from helix_stream.store.sqlite._read import (
    SQL_CALLS,
    SQL_LAST_SEQ,
    SQL_PENDING,
    SQL_READ_LOG,
    SQL_REWIND_QUEUE,
)
from tests._store import (
    append_messages,
    commit_context,
    create_session,
    delivered,
    pending_context,
)
from tests.store import _pg

# One factory per implementation (keyword arguments go to the store's constructor); a new
# store joins the whole suite by adding a line here.
STORES: dict[str, Callable[..., Store]] = {
    "memory": lambda _tmp_path, **kw: MemoryStore(**kw),
    "sqlite": lambda tmp_path, **kw: SQLiteStore(tmp_path / "contract.db", **kw),
    # A fresh schema per test (dropped after it); skipped, with the reason, with no server.
    "postgres": lambda _tmp_path, **kw: _pg.make_store(**kw),
}
QUEUE_CAP = 10


@pytest.fixture(params=list(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = STORES[request.param](tmp_path)
    yield made
    await made.close()


@pytest.fixture(params=list(STORES))
async def capped(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """A store whose sessions queue at most QUEUE_CAP undelivered items."""
    made = STORES[request.param](tmp_path, max_queued_items=QUEUE_CAP)
    yield made
    await made.close()


SID = "s-1"
APP: dict[str, Any] = {"type": "app"}


def notice(text: str) -> dict[str, Any]:
    return {"kind": "notice", "content": text}


def checkpoint(
    *, id: str = "", step_number: int = 0, state: dict[str, Any] | None = None
) -> Checkpoint:
    return Checkpoint(
        id=id,
        session_id=SID,
        step_number=step_number,
        log_seq=0,
        state=state or {},
        created_at=0.0,
    )


async def snapshot(store: Store, *session_ids: str) -> tuple[object, ...]:
    """Everything the protocol lets a reader see about these sessions, plus the counter."""
    state: list[object] = [store.write_transactions]
    for sid in session_ids:
        record = await store.get_session(sid)
        state.append(record)
        if record is not None:
            state.append(await store.read_log(sid))
            state.append(await pending_context(store, sid))
            state.append(await store.checkpoints(sid))
    return tuple(state)


async def session(store: Store, sid: str = SID) -> SessionRecord:
    return await create_session(store, sid, agent_name="agent")


# -- sessions ------------------------------------------------------------------------------


async def test_store_satisfies_the_protocol_and_starts_with_no_writes(
    store: Store,
) -> None:
    assert isinstance(store, Store)
    assert store.write_transactions == 0


# What the session engine and the server call: the whole protocol.
PROTOCOL = {
    "get_session", "read_snapshot", "write_turn", "enqueue_context", "read_log", "checkpoints",
    "last_seq", "rewind", "branch", "set_status", "update_session_meta", "close",
}  # fmt: skip


def test_the_protocol_is_what_the_engine_uses_and_no_store_has_more() -> None:
    protocol = {name for name, value in vars(Store).items() if callable(value)}
    assert {name for name in protocol if not name.startswith("_")} == PROTOCOL
    # PostgresStore's own: migrating ahead of a deploy.
    own = {MemoryStore: set(), SQLiteStore: set(), PostgresStore: {"migrate"}}
    for cls, extra in own.items():
        public = {name for name in dir(cls) if not name.startswith("_")}
        assert {n for n in public if callable(getattr(cls, n))} == PROTOCOL | extra, cls


async def test_create_session_returns_an_idle_record_with_its_fields(store: Store) -> None:
    record = await create_session(
        store, SID, agent_name="agent", parent_id="parent", meta={"z": 1, "a": [1, "é"]}
    )
    assert (record.id, record.agent_name, record.status, record.parent_id) == (
        SID,
        "agent",
        "idle",
        "parent",
    )
    assert record.meta == {"z": 1, "a": [1, "é"]}
    assert list(record.meta) == ["z", "a"]
    assert record.created_at > 0 and record.updated_at == record.created_at
    assert await store.get_session(SID) == record
    assert store.write_transactions == 1


async def test_create_session_never_overwrites_and_writes_nothing_the_second_time(
    store: Store,
) -> None:
    first = await session(store)
    again = await create_session(store, SID, agent_name="other", parent_id="p", meta={"x": 1})
    assert again == first
    assert await store.get_session(SID) == first
    assert store.write_transactions == 1


async def test_get_session_of_an_unknown_id_is_none(store: Store) -> None:
    assert await store.get_session("nope") is None


async def test_set_status_sets_it_and_counts_one_write(store: Store) -> None:
    created = await session(store)
    assert await store.set_status(SID, "running") is True
    record = await store.get_session(SID)
    assert record is not None
    assert record.status == "running"
    assert record.updated_at >= created.updated_at
    assert store.write_transactions == 2


async def test_set_status_with_expect_is_a_compare_and_set(store: Store) -> None:
    await session(store)
    before = await snapshot(store, SID)
    assert await store.set_status(SID, "paused", expect=["running", "failed"]) is False
    assert await snapshot(store, SID) == before
    assert await store.set_status(SID, "running", expect=["idle"]) is True
    record = await store.get_session(SID)
    assert record is not None and record.status == "running"


async def test_concurrent_compare_and_set_lets_exactly_one_caller_win(
    store: Store,
) -> None:
    await session(store)
    results = await asyncio.gather(
        *(store.set_status(SID, "running", expect=["idle"]) for _ in range(20))
    )
    assert results.count(True) == 1
    assert store.write_transactions == 2


async def test_set_status_refuses_an_unknown_status_and_writes_nothing(
    store: Store,
) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises(ValueError, match="bogus"):
        await store.set_status(SID, "bogus")  # type: ignore[arg-type]
    assert await snapshot(store, SID) == before


async def test_set_status_refuses_expect_given_as_a_bare_string(store: Store) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises(TypeError, match="list of statuses"):
        await store.set_status(SID, "running", expect="idle")  # type: ignore[arg-type]
    assert await snapshot(store, SID) == before


# -- the log -------------------------------------------------------------------------------


async def test_append_messages_numbers_them_from_one_without_gaps(store: Store) -> None:
    await session(store)
    first = await append_messages(
        store, SID, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    )
    second = await append_messages(store, SID, [{"role": "tool", "content": "c"}])
    assert [(r.seq, r.role) for r in first + second] == [
        (1, "user"),
        (2, "assistant"),
        (3, "tool"),
    ]
    assert await store.read_log(SID) == first + second
    assert store.write_transactions == 3


async def test_payloads_read_back_equal_with_the_same_key_order(store: Store) -> None:
    await session(store)
    message = {
        "role": "assistant",
        "z": None,
        "content": "ünïcødé ✓ 日本",
        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": '{"b":1,"a":2}'}}],
        "a": 1.5,
    }
    [written] = await append_messages(store, SID, [message])
    [read] = await store.read_log(SID)
    assert read.payload == message == written.payload
    assert list(read.payload) == ["role", "z", "content", "tool_calls", "a"]
    assert list(read.payload["tool_calls"][0]) == ["id", "function"]


async def test_a_caller_mutating_its_dict_does_not_change_the_log(store: Store) -> None:
    await session(store)
    message: dict[str, Any] = {"role": "user", "content": "a"}
    [written] = await append_messages(store, SID, [message])
    message["content"] = "changed"
    written.payload["content"] = "also changed"
    [read] = await store.read_log(SID)
    assert read.payload == {"role": "user", "content": "a"}


async def test_read_log_after_seq_returns_only_later_records(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [{"role": "user", "content": str(i)} for i in range(5)])
    assert [r.seq for r in await store.read_log(SID, after_seq=3)] == [4, 5]
    assert await store.read_log(SID, after_seq=5) == []


async def test_sequences_are_per_session(store: Store) -> None:
    await session(store, "a")
    await session(store, "b")
    await append_messages(store, "a", [{"role": "user", "content": "1"}])
    [b1] = await append_messages(store, "b", [{"role": "user", "content": "1"}])
    [a2] = await append_messages(store, "a", [{"role": "user", "content": "2"}])
    assert (b1.seq, a2.seq) == (1, 2)


async def test_append_messages_with_nothing_writes_nothing(store: Store) -> None:
    await session(store)
    before = await snapshot(store, SID)
    assert await append_messages(store, SID, []) == []
    assert await snapshot(store, SID) == before


async def test_append_messages_refuses_a_message_without_a_role(store: Store) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises(ValueError, match="role"):
        await append_messages(store, SID, [{"role": "user", "content": "ok"}, {"content": "x"}])
    assert await snapshot(store, SID) == before


# -- checkpoints ---------------------------------------------------------------------------


async def test_append_messages_with_a_checkpoint_is_one_transaction(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [{"role": "user", "content": "q"}])
    records = await append_messages(
        store,
        SID,
        [{"role": "assistant", "content": "a"}, {"role": "tool", "content": "t"}],
        checkpoint=checkpoint(step_number=0, state={"myapp.budget": {"count": 2}, "a": 1}),
    )
    assert store.write_transactions == 3
    [cp] = await store.checkpoints(SID)
    assert cp.log_seq == records[-1].seq == 3
    assert (cp.session_id, cp.step_number) == (SID, 0)
    assert cp.state == {"myapp.budget": {"count": 2}, "a": 1}
    assert list(cp.state) == ["myapp.budget", "a"]
    assert uuid.UUID(hex=cp.id).version == 4 and cp.id == uuid.UUID(hex=cp.id).hex


async def test_a_given_checkpoint_id_is_kept(store: Store) -> None:
    await session(store)
    await append_messages(
        store, SID, [{"role": "user", "content": "q"}], checkpoint=checkpoint(id="cp-1")
    )
    assert [cp.id for cp in await store.checkpoints(SID)] == ["cp-1"]


async def test_a_checkpoint_without_messages_points_at_the_current_last_seq(
    store: Store,
) -> None:
    await session(store)
    await append_messages(store, SID, [{"role": "user", "content": str(i)} for i in range(4)])
    assert await append_messages(store, SID, [], checkpoint=checkpoint(step_number=3)) == []
    assert store.write_transactions == 3
    [cp] = await store.checkpoints(SID)
    assert (cp.log_seq, cp.step_number) == (4, 3)


async def test_checkpoints_are_listed_oldest_first(store: Store) -> None:
    await session(store)
    for step in range(3):
        await append_messages(
            store,
            SID,
            [{"role": "assistant", "content": str(step)}],
            checkpoint=checkpoint(step_number=step),
        )
    assert [(cp.step_number, cp.log_seq) for cp in await store.checkpoints(SID)] == [
        (0, 1),
        (1, 2),
        (2, 3),
    ]


async def test_a_duplicate_checkpoint_id_is_refused_with_its_messages(
    store: Store,
) -> None:
    await session(store)
    await append_messages(
        store, SID, [{"role": "user", "content": "q"}], checkpoint=checkpoint(id="cp")
    )
    before = await snapshot(store, SID)
    with pytest.raises(ValueError, match="'cp'"):
        await append_messages(
            store, SID, [{"role": "assistant", "content": "a"}], checkpoint=checkpoint(id="cp")
        )
    assert await snapshot(store, SID) == before


# -- failures mid-transaction --------------------------------------------------------------

BAD_VALUES = [pytest.param(object(), id="object"), pytest.param(math.nan, id="nan")]


@pytest.mark.parametrize("bad", BAD_VALUES)
async def test_a_bad_message_after_good_ones_leaves_nothing_written(
    store: Store, bad: object
) -> None:
    await session(store)
    await append_messages(store, SID, [{"role": "user", "content": "kept"}])
    before = await snapshot(store, SID)
    with pytest.raises((TypeError, ValueError)):
        await append_messages(
            store,
            SID,
            [{"role": "assistant", "content": "a"}, {"role": "tool", "content": bad}],
            checkpoint=checkpoint(),
        )
    assert await snapshot(store, SID) == before


@pytest.mark.parametrize("bad", BAD_VALUES)
async def test_a_bad_checkpoint_state_leaves_its_messages_unwritten(
    store: Store, bad: object
) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises((TypeError, ValueError)):
        await append_messages(
            store,
            SID,
            [{"role": "assistant", "content": "a"}],
            checkpoint=checkpoint(state={"x": bad}),
        )
    assert await snapshot(store, SID) == before


@pytest.mark.parametrize("bad", BAD_VALUES)
async def test_a_bad_extra_row_leaves_the_queue_undelivered_and_the_log_unchanged(
    store: Store, bad: object
) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("a"), notice("b")], source="app", origin=APP)
    before = await snapshot(store, SID)
    with pytest.raises((TypeError, ValueError)):
        await commit_context(store, SID, [{"kind": "notice", "content": bad}])
    assert await snapshot(store, SID) == before
    assert len(await pending_context(store, SID)) == 1


@pytest.mark.parametrize("bad", BAD_VALUES)
async def test_bad_items_are_not_queued(store: Store, bad: object) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises((TypeError, ValueError)):
        await store.enqueue_context(
            SID, [{"kind": "notice", "content": bad}], source="app", origin=APP
        )
    with pytest.raises((TypeError, ValueError)):
        await store.enqueue_context(
            SID,
            [notice("ok"), {"kind": "notice", "content": bad}],
            source="app",
            origin=APP,
            key="k",
        )
    assert await snapshot(store, SID) == before
    # The refused key was not remembered: it can still be used.
    assert await store.enqueue_context(SID, [notice("ok")], source="app", origin=APP, key="k") == 1


# -- unknown sessions ----------------------------------------------------------------------

Call = Callable[[Store, str], Awaitable[object]]
UNKNOWN_SESSION_CALLS: list[Any] = [
    pytest.param(lambda s, sid: s.set_status(sid, "running"), id="set_status"),
    pytest.param(lambda s, sid: s.set_status(sid, "running", expect=["idle"]), id="set_status_cas"),
    pytest.param(lambda s, sid: s.write_turn(sid, TurnWrite()), id="write_turn_empty"),
    pytest.param(
        lambda s, sid: s.write_turn(sid, TurnWrite(messages=[{"role": "user", "content": "x"}])),
        id="write_turn_messages",
    ),
    pytest.param(
        lambda s, sid: s.write_turn(sid, TurnWrite(checkpoint=checkpoint())),
        id="write_turn_checkpoint",
    ),
    pytest.param(lambda s, sid: s.read_log(sid), id="read_log"),
    pytest.param(
        lambda s, sid: s.enqueue_context(sid, [notice("x")], source="app", origin=APP),
        id="enqueue_context",
    ),
    pytest.param(
        lambda s, sid: s.enqueue_context(sid, [notice("x")], source="app", origin=APP, key="k"),
        id="enqueue_context_key",
    ),
    pytest.param(
        lambda s, sid: s.write_turn(sid, TurnWrite(deliver_queue=True)), id="write_turn_queue"
    ),
    pytest.param(
        lambda s, sid: s.write_turn(sid, TurnWrite(rows=[{"kind": "notice", "content": "m"}])),
        id="write_turn_rows",
    ),
    pytest.param(
        lambda s, sid: s.write_turn(sid, TurnWrite(expect=["idle"], status="running")),
        id="write_turn_claim",
    ),
    pytest.param(lambda s, sid: s.checkpoints(sid), id="checkpoints"),
    pytest.param(lambda s, sid: s.last_seq(sid), id="last_seq"),
    pytest.param(lambda s, sid: s.update_session_meta(sid, {"a": 1}), id="update_session_meta"),
    pytest.param(lambda s, sid: s.rewind(sid, 0), id="rewind"),
    pytest.param(lambda s, sid: s.branch(sid, "new-9", upto_seq=0), id="branch"),
]


@pytest.mark.parametrize("call", UNKNOWN_SESSION_CALLS)
async def test_an_unknown_session_is_refused_and_nothing_is_written(
    store: Store, call: Call
) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("q")], source="app", origin=APP, key="k")
    before = await snapshot(store, SID, "ghost-7")
    with pytest.raises(SessionNotFoundError, match="ghost-7") as raised:
        await call(store, "ghost-7")
    assert raised.value.code == "state_session_not_found" and raised.value.http_status == 404
    assert await snapshot(store, SID, "ghost-7") == before
    assert await store.get_session("ghost-7") is None
    assert await store.get_session("new-9") is None


# -- the context queue and request keys ----------------------------------------------------


async def test_enqueue_records_every_item_as_one_pending_entry(store: Store) -> None:
    await session(store)
    origin = {"type": "tool", "tool_call_id": "call-1"}
    assert (
        await store.enqueue_context(
            SID, [notice("a"), notice("b")], source="tool", origin=origin, key="t:call-1"
        )
        == 2
    )
    assert await store.enqueue_context(SID, [notice("c")], source="app", origin=APP) == 1
    first, second = await pending_context(store, SID)
    assert isinstance(first, QueueEntry)
    assert (first.items, first.source, first.key, first.origin, first.delivered_seq) == (
        [notice("a"), notice("b")],
        "tool",
        "t:call-1",
        origin,
        None,
    )
    assert (second.items, second.key) == ([notice("c")], None)
    assert first.id < second.id
    assert first.created_at > 0
    assert store.write_transactions == 3


async def test_pending_context_is_read_only(store: Store) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("a")], source="app", origin=APP)
    before = await snapshot(store, SID)
    assert await pending_context(store, SID) == await pending_context(store, SID)
    assert await snapshot(store, SID) == before


async def test_same_key_with_the_same_items_records_nothing(store: Store) -> None:
    await session(store)
    items = [{"kind": "notice", "content": "a", "meta": {"x": 1, "y": 2}}, notice("b")]
    assert await store.enqueue_context(SID, items, source="app", origin=APP, key="k") == 2
    before = await snapshot(store, SID)
    # Same fields in another key order are the same items (compared on canonical JSON).
    reordered_fields = [{"meta": {"y": 2, "x": 1}, "content": "a", "kind": "notice"}, notice("b")]
    assert await store.enqueue_context(SID, items, source="app", origin=APP, key="k") == 0
    assert (
        await store.enqueue_context(SID, reordered_fields, source="app", origin=APP, key="k") == 0
    )
    assert await snapshot(store, SID) == before


@pytest.mark.parametrize(
    "other",
    [
        pytest.param([notice("a"), notice("B")], id="changed"),
        pytest.param([notice("a"), notice("b"), notice("c")], id="more"),
        pytest.param([notice("a")], id="fewer"),
        pytest.param([notice("b"), notice("a")], id="reordered"),
        pytest.param([], id="none"),
    ],
)
async def test_same_key_with_other_items_is_a_conflict_and_writes_nothing(
    store: Store, other: list[dict[str, Any]]
) -> None:
    await session(store)
    await store.enqueue_context(
        SID, [notice("a"), notice("b")], source="app", origin=APP, key="lang-42"
    )
    before = await snapshot(store, SID)
    with pytest.raises(ContextKeyConflictError) as raised:
        await store.enqueue_context(SID, other, source="app", origin=APP, key="lang-42")
    error = raised.value
    assert (error.code, error.http_status, error.retryable) == (
        "state_context_key_conflict",
        409,
        False,
    )
    assert "'lang-42'" in error.message
    assert "nothing was written" in error.message
    assert "same items" in error.message and "new key" in error.message
    assert await snapshot(store, SID) == before


async def test_ignore_mode_keeps_the_first_items_and_returns_zero(store: Store) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("first")], source="tool", origin=APP, key="site")
    before = await snapshot(store, SID)
    recorded = await store.enqueue_context(
        SID, [notice("second")], source="tool", origin=APP, key="site", on_key_conflict="ignore"
    )
    assert recorded == 0
    assert await snapshot(store, SID) == before


async def test_without_a_key_every_call_records_again(store: Store) -> None:
    await session(store)
    for _ in range(3):
        assert await store.enqueue_context(SID, [notice("same")], source="app", origin=APP) == 1
    assert [e.items for e in await pending_context(store, SID)] == [[notice("same")]] * 3


async def test_keys_are_scoped_per_session(store: Store) -> None:
    await session(store, "a")
    await session(store, "b")
    assert await store.enqueue_context("a", [notice("x")], source="app", origin=APP, key="k") == 1
    assert await store.enqueue_context("b", [notice("y")], source="app", origin=APP, key="k") == 1


async def test_a_key_is_remembered_after_its_items_were_delivered(store: Store) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("a")], source="app", origin=APP, key="k")
    await commit_context(store, SID)
    before = await snapshot(store, SID)
    assert await store.enqueue_context(SID, [notice("a")], source="app", origin=APP, key="k") == 0
    with pytest.raises(ContextKeyConflictError):
        await store.enqueue_context(SID, [notice("b")], source="app", origin=APP, key="k")
    assert await snapshot(store, SID) == before


async def test_enqueueing_no_items_records_nothing(store: Store) -> None:
    await session(store)
    before = await snapshot(store, SID)
    assert await store.enqueue_context(SID, [], source="app", origin=APP) == 0
    assert await store.enqueue_context(SID, [], source="app", origin=APP, key="k") == 0
    assert await snapshot(store, SID) == before
    # An empty request leaves no key behind.
    assert await store.enqueue_context(SID, [notice("a")], source="app", origin=APP, key="k") == 1


async def test_enqueue_refuses_an_unknown_conflict_mode(store: Store) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises(ValueError, match="on_key_conflict"):
        await store.enqueue_context(
            SID,
            [notice("a")],
            source="app",
            origin=APP,
            on_key_conflict="skip",  # type: ignore[arg-type]
        )
    assert await snapshot(store, SID) == before


async def test_concurrent_enqueues_with_one_key_record_once(store: Store) -> None:
    await session(store)
    items = [notice("a"), notice("b")]
    results = await asyncio.gather(
        *(store.enqueue_context(SID, items, source="app", origin=APP, key="k") for _ in range(20))
    )
    assert sorted(results) == [0] * 19 + [2]
    assert [e.items for e in await pending_context(store, SID)] == [items]
    assert store.write_transactions == 2


# -- the context pass ----------------------------------------------------------------------


async def test_commit_context_is_one_transaction_that_delivers_every_entry(
    store: Store,
) -> None:
    await session(store)
    await append_messages(store, SID, [{"role": "user", "content": "hi"}])
    tool_origin = {"type": "tool", "tool_call_id": "c1"}
    await store.enqueue_context(SID, [notice("a"), notice("b")], source="app", origin=APP, key="k")
    await store.enqueue_context(
        SID, [{"kind": "tools", "disable": ["web"]}], source="tool", origin=tool_origin
    )
    entries = await pending_context(store, SID)
    memory_row = {
        "kind": "notice",
        "content": "m",
        "source": "memory",
        "origin": {"type": "memory"},
    }
    writes = store.write_transactions

    rows = await commit_context(store, SID, [memory_row])

    assert store.write_transactions == writes + 1
    assert all(isinstance(r, LogRecord) and r.role == "context" for r in rows)
    assert [r.seq for r in rows] == [2, 3, 4, 5]
    assert [r.payload for r in rows] == [
        {
            **notice("a"),
            "source": "app",
            "origin": {"type": "app", "queue_id": entries[0].id, "key": "k"},
        },
        {
            **notice("b"),
            "source": "app",
            "origin": {"type": "app", "queue_id": entries[0].id, "key": "k"},
        },
        {
            "kind": "tools",
            "disable": ["web"],
            "source": "tool",
            "origin": {
                "type": "tool",
                "tool_call_id": "c1",
                "queue_id": entries[1].id,
                "key": None,
            },
        },
        memory_row,
    ]
    assert list(rows[0].payload) == ["kind", "content", "source", "origin"]
    assert await store.read_log(SID, after_seq=1) == rows
    assert await pending_context(store, SID) == []


async def test_each_entry_is_delivered_at_the_seq_of_its_first_row(store: Store) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("a"), notice("b")], source="app", origin=APP)
    await store.enqueue_context(SID, [notice("c")], source="app", origin=APP)
    await store.enqueue_context(SID, [notice("d")], source="app", origin=APP)
    first, second, third = await pending_context(store, SID)
    rows = await commit_context(store, SID)
    assert [r.payload["origin"]["queue_id"] for r in rows] == [first.id] * 2 + [second.id, third.id]
    assert await delivered(store, SID) == {first.id: 1, second.id: 3, third.id: 4}
    assert await pending_context(store, SID) == []
    # The store marked each entry delivered at its first row: a rewind before that row gives it
    # back, one past it keeps it.
    assert (await store.rewind(SID, 3)).redelivered_entries == [third.id]
    assert (await store.rewind(SID, 2)).redelivered_entries == [second.id]
    assert await pending_context(store, SID) == [second, third]


async def test_commit_context_with_nothing_new_writes_nothing(store: Store) -> None:
    await session(store)
    before = await snapshot(store, SID)
    assert await commit_context(store, SID) == []
    assert await snapshot(store, SID) == before
    await store.enqueue_context(SID, [notice("a")], source="app", origin=APP)
    assert len(await commit_context(store, SID)) == 1
    after_first = await snapshot(store, SID)
    assert await commit_context(store, SID) == []
    assert await snapshot(store, SID) == after_first


async def test_commit_context_with_only_extra_rows_appends_them(store: Store) -> None:
    await session(store)
    hook_row = {
        "kind": "notice",
        "content": "h",
        "source": "hook",
        "cursor": 7,
        "origin": {"type": "hook"},
    }
    rows = await commit_context(store, SID, [hook_row])
    assert [(r.seq, r.role, r.payload) for r in rows] == [(1, "context", hook_row)]
    assert store.write_transactions == 2


async def test_context_rows_and_messages_share_one_gap_free_sequence(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [{"role": "user", "content": "q"}])
    await store.enqueue_context(SID, [notice("a")], source="app", origin=APP)
    await commit_context(store, SID)
    await append_messages(
        store, SID, [{"role": "assistant", "content": "r"}, {"role": "tool", "content": "t"}]
    )
    await store.enqueue_context(SID, [notice("b"), notice("c")], source="app", origin=APP)
    await commit_context(store, SID)
    await append_messages(store, SID, [{"role": "assistant", "content": "done"}])
    log = await store.read_log(SID)
    assert [(r.seq, r.role) for r in log] == [
        (1, "user"),
        (2, "context"),
        (3, "assistant"),
        (4, "tool"),
        (5, "context"),
        (6, "context"),
        (7, "assistant"),
    ]


async def test_an_items_own_source_wins_over_the_entrys(store: Store) -> None:
    await session(store)
    await store.enqueue_context(
        SID, [{**notice("a"), "source": "memory"}, notice("b")], source="app", origin=APP
    )
    first, second = await commit_context(store, SID)
    assert (first.payload["source"], second.payload["source"]) == ("memory", "app")


# -- last_seq and session meta -------------------------------------------------------------


async def test_last_seq_is_zero_for_an_empty_log_then_the_last_records_seq(store: Store) -> None:
    await session(store)
    assert await store.last_seq(SID) == 0
    await append_messages(store, SID, [{"role": "user", "content": "q"}])
    await store.enqueue_context(SID, [notice("a"), notice("b")], source="app", origin=APP)
    await commit_context(store, SID)
    assert await store.last_seq(SID) == 3


async def test_update_session_meta_merges_the_patch_and_removes_none_keys(store: Store) -> None:
    created = await create_session(
        store, SID, agent_name="agent", meta={"a": 1, "b": {"x": 1}, "c": 3, "n": 1}
    )
    writes = store.write_transactions
    patch = {"b": {"y": 2}, "c": None, "d": [4], "absent": None, "n": True}
    record = await store.update_session_meta(SID, patch)
    # Shallow: "b" is replaced whole; True is not the JSON of 1, so "n" changed too.
    assert record.meta == {"a": 1, "b": {"y": 2}, "n": True, "d": [4]}
    assert list(record.meta) == ["a", "b", "n", "d"]
    assert record.meta["n"] is True
    assert (record.id, record.agent_name, record.status) == (SID, "agent", "idle")
    assert record.created_at == created.created_at
    assert record.updated_at >= created.updated_at
    assert await store.get_session(SID) == record
    assert store.write_transactions == writes + 1


async def test_update_session_meta_that_changes_nothing_writes_nothing(store: Store) -> None:
    await create_session(store, SID, agent_name="agent", meta={"a": 1})
    before = await snapshot(store, SID)
    for patch in ({}, {"a": 1}, {"absent": None}):
        assert await store.update_session_meta(SID, patch) == before[1]
    assert await snapshot(store, SID) == before


@pytest.mark.parametrize("bad", BAD_VALUES)
async def test_update_session_meta_refuses_a_value_that_is_not_json(
    store: Store, bad: object
) -> None:
    await create_session(store, SID, agent_name="agent", meta={"a": 1})
    before = await snapshot(store, SID)
    with pytest.raises((TypeError, ValueError)):
        await store.update_session_meta(SID, {"b": 2, "c": {"x": bad}})
    assert await snapshot(store, SID) == before


async def test_a_caller_mutating_a_records_meta_does_not_change_the_session(
    store: Store,
) -> None:
    # Regression: MemoryStore handed out the dict it kept, so this changed the stored meta.
    record = await create_session(store, SID, agent_name="agent", meta={"a": 1})
    record.meta["a"] = 2
    read = await store.get_session(SID)
    assert read is not None
    read.meta["b"] = 3
    updated = await store.update_session_meta(SID, {"c": 4})
    updated.meta.clear()
    again = await store.get_session(SID)
    assert again is not None and again.meta == {"a": 1, "c": 4}


# -- rewinds -------------------------------------------------------------------------------


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calling(*call_ids: str) -> dict[str, Any]:
    """An assistant message that calls a tool once per id."""
    calls = [
        {"id": cid, "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for cid in call_ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "done"}


def tool_origin(call_id: str) -> dict[str, Any]:
    return {"type": "tool", "tool_call_id": call_id, "tool_name": "f", "position": 0}


async def enqueue_tool(store: Store, call_id: str, text: str) -> QueueEntry:
    """Queue what the tool of ``call_id`` adds, as the executor does; return the entry."""
    await store.enqueue_context(
        SID,
        [{**notice(text), "source": "tool"}],
        source="tool",
        origin=tool_origin(call_id),
        key=f"call:{call_id}:0",
        on_key_conflict="ignore",
    )
    return (await pending_context(store, SID))[-1]


async def test_rewind_deletes_later_records_and_checkpoints_and_seqs_continue(
    store: Store,
) -> None:
    await session(store)
    await append_messages(store, SID, [user("q")])
    await append_messages(
        store, SID, [{"role": "assistant", "content": "a"}], checkpoint=checkpoint(id="cp-2")
    )
    await append_messages(store, SID, [user("q2")])
    await append_messages(
        store, SID, [{"role": "assistant", "content": "b"}], checkpoint=checkpoint(id="cp-4")
    )
    kept_log = (await store.read_log(SID))[:2]
    kept_cps = (await store.checkpoints(SID))[:1]
    writes = store.write_transactions

    result = await store.rewind(SID, 2)

    assert result == RewindResult(removed_records=2, redelivered_entries=[], dropped_entries=[])
    assert store.write_transactions == writes + 1
    assert await store.read_log(SID) == kept_log
    assert await store.checkpoints(SID) == kept_cps
    assert [cp.id for cp in kept_cps] == ["cp-2"]
    assert await store.last_seq(SID) == 2
    [again] = await append_messages(store, SID, [user("again")], checkpoint=checkpoint(id="cp-4"))
    assert again.seq == 3
    assert [(cp.id, cp.log_seq) for cp in await store.checkpoints(SID)] == [
        ("cp-2", 2),
        ("cp-4", 3),
    ]


async def test_rewind_to_zero_empties_the_log(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [user("a"), user("b")], checkpoint=checkpoint())
    result = await store.rewind(SID, 0)
    assert result.removed_records == 2
    assert await store.read_log(SID) == []
    assert await store.checkpoints(SID) == []
    [first] = await append_messages(store, SID, [user("c")])
    assert first.seq == 1


async def test_rewind_keeps_the_session_record_but_its_updated_at(store: Store) -> None:
    await create_session(store, SID, agent_name="agent", meta={"m": 1})
    await store.set_status(SID, "failed")
    await append_messages(store, SID, [user("a"), user("b")])
    before = await store.get_session(SID)
    await store.rewind(SID, 1)
    after = await store.get_session(SID)
    assert before is not None and after is not None
    assert (after.status, after.meta, after.parent_id) == ("failed", {"m": 1}, None)
    assert after.updated_at >= before.updated_at


async def test_rewind_redelivers_an_app_entry_whose_rows_were_cut_once(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [user("q")])
    await store.enqueue_context(SID, [notice("a"), notice("b")], source="app", origin=APP, key="k")
    [entry] = await pending_context(store, SID)
    rows = await commit_context(store, SID)
    await append_messages(store, SID, [{"role": "assistant", "content": "r"}])
    assert await delivered(store, SID) == {entry.id: 2}

    result = await store.rewind(SID, 1)

    assert result == RewindResult(
        removed_records=3, redelivered_entries=[entry.id], dropped_entries=[]
    )
    assert await delivered(store, SID) == {}
    assert await pending_context(store, SID) == [entry]  # the same entry, undelivered again
    assert entry.key == "k"
    # Its key is kept: a retry of the same request still records nothing.
    assert await store.enqueue_context(SID, entry.items, source="app", origin=APP, key="k") == 0
    again = await commit_context(store, SID)
    assert [(r.seq, r.payload) for r in again] == [(r.seq, r.payload) for r in rows]
    assert await delivered(store, SID) == {entry.id: 2}
    assert await commit_context(store, SID) == []
    assert await pending_context(store, SID) == []


async def test_rewind_leaves_an_entry_whose_rows_survive_delivered(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [user("q")])
    await store.enqueue_context(SID, [notice("a")], source="app", origin=APP)
    await commit_context(store, SID)
    await append_messages(store, SID, [{"role": "assistant", "content": "r"}])
    before = await delivered(store, SID)
    result = await store.rewind(SID, 2)
    assert (result.redelivered_entries, result.dropped_entries) == ([], [])
    assert await delivered(store, SID) == before and len(before) == 1
    assert await pending_context(store, SID) == []


async def test_rewind_drops_a_delivered_tool_entry_whose_call_it_removed_and_its_key(
    store: Store,
) -> None:
    await session(store)
    await append_messages(store, SID, [user("q"), calling("c1"), answer("c1")])
    entry = await enqueue_tool(store, "c1", "switch web off")
    await commit_context(store, SID)
    await append_messages(store, SID, [{"role": "assistant", "content": "r"}])

    result = await store.rewind(SID, 1)

    assert result == RewindResult(
        removed_records=4, redelivered_entries=[], dropped_entries=[entry.id]
    )
    assert await pending_context(store, SID) == []
    assert await delivered(store, SID) == {}
    assert await commit_context(store, SID) == []
    # The key went with the entry: the re-run call's items record anew, even other ones.
    await append_messages(store, SID, [calling("c1"), answer("c1")])
    assert (
        await store.enqueue_context(
            SID, [notice("other")], source="tool", origin=tool_origin("c1"), key="call:c1:0"
        )
        == 1
    )


async def test_rewind_redelivers_a_tool_entry_whose_call_survived(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [user("q"), calling("c0", "c1"), answer("c0"), answer("c1")])
    entry = await enqueue_tool(store, "c1", "note")
    [row] = await commit_context(store, SID)
    await append_messages(store, SID, [{"role": "assistant", "content": "r"}])

    result = await store.rewind(SID, 4)

    assert result == RewindResult(
        removed_records=2, redelivered_entries=[entry.id], dropped_entries=[]
    )
    assert [e.id for e in await pending_context(store, SID)] == [entry.id]
    [again] = await commit_context(store, SID)
    assert (again.seq, again.payload) == (row.seq, row.payload)


async def test_rewind_drops_an_undelivered_tool_entry_whose_call_it_removed(
    store: Store,
) -> None:
    await session(store)
    await append_messages(store, SID, [user("q"), calling("c0"), answer("c0")])
    await append_messages(store, SID, [calling("c1"), answer("c1")])
    kept_tool = await enqueue_tool(store, "c0", "from c0")
    dropped = await enqueue_tool(store, "c1", "from c1")
    await store.enqueue_context(SID, [notice("app")], source="app", origin=APP, key="k")
    app = (await pending_context(store, SID))[-1]

    result = await store.rewind(SID, 3)

    assert result == RewindResult(
        removed_records=2, redelivered_entries=[], dropped_entries=[dropped.id]
    )
    assert await pending_context(store, SID) == [kept_tool, app]
    rows = await commit_context(store, SID)
    assert [r.payload["content"] for r in rows] == ["from c0", "app"]


async def test_rewind_sorts_redelivered_entries_back_into_id_order(store: Store) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("first")], source="app", origin=APP)
    await commit_context(store, SID)
    await store.enqueue_context(SID, [notice("second")], source="app", origin=APP)
    result = await store.rewind(SID, 0)
    assert len(result.redelivered_entries) == 1
    assert [e.items for e in await pending_context(store, SID)] == [
        [notice("first")],
        [notice("second")],
    ]
    assert [r.payload["content"] for r in await commit_context(store, SID)] == ["first", "second"]


async def test_rewind_to_the_last_seq_writes_nothing(store: Store) -> None:
    await session(store)
    await append_messages(store, SID, [user("q"), calling("c1")], checkpoint=checkpoint())
    await enqueue_tool(store, "gone", "queued by a call the log does not hold")
    before = await snapshot(store, SID)
    result = await store.rewind(SID, 2)
    assert result == RewindResult(removed_records=0, redelivered_entries=[], dropped_entries=[])
    assert await snapshot(store, SID) == before


@pytest.mark.parametrize("to_seq", [-1, 4, 99], ids=["negative", "last_plus_one", "far"])
async def test_rewind_refuses_a_seq_out_of_range_and_writes_nothing(
    store: Store, to_seq: int
) -> None:
    await session(store)
    await append_messages(store, SID, [user("q"), calling("c1"), answer("c1")])
    await store.enqueue_context(SID, [notice("a")], source="app", origin=APP, key="k")
    before = await snapshot(store, SID)
    with pytest.raises(ValueError, match=f"to_seq={to_seq}.*nothing was written"):
        await store.rewind(SID, to_seq)
    assert await snapshot(store, SID) == before


async def test_rewind_refuses_to_cut_inside_one_entrys_rows_and_writes_nothing(
    store: Store,
) -> None:
    await session(store)
    await append_messages(store, SID, [user("q")])
    await store.enqueue_context(SID, [notice("a"), notice("b")], source="app", origin=APP)
    await commit_context(store, SID)  # rows 2 and 3: one entry
    await append_messages(store, SID, [{"role": "assistant", "content": "r"}])
    before = await snapshot(store, SID)
    with pytest.raises(ValueError, match="inside the rows of queue entry"):
        await store.rewind(SID, 2)
    assert await snapshot(store, SID) == before
    # Either side of the entry is fine.
    assert (await store.rewind(SID, 3)).removed_records == 1
    assert (await store.rewind(SID, 1)).removed_records == 2


# -- branches ------------------------------------------------------------------------------

NEW = "s-2"


async def branch_source(store: Store) -> None:
    """SID: seqs 1-2 messages (checkpoint "cp-a" at 2), 3 a context row (key "k"),
    4 a message (checkpoint "cp-b" at 4); then one entry still queued (key "q")."""
    await create_session(store, SID, agent_name="agent", meta={"m": [1], "n": "x"})
    await append_messages(
        store,
        SID,
        [user("q"), {"role": "assistant", "content": "a"}],
        checkpoint=checkpoint(id="cp-a"),
    )
    await store.enqueue_context(SID, [notice("delivered")], source="app", origin=APP, key="k")
    await commit_context(store, SID)
    await append_messages(
        store,
        SID,
        [{"role": "assistant", "content": "b"}],
        checkpoint=checkpoint(id="cp-b", step_number=1),
    )
    await store.enqueue_context(SID, [notice("queued")], source="app", origin=APP, key="q")


async def test_branch_copies_records_and_checkpoints_up_to_the_seq(store: Store) -> None:
    await branch_source(store)
    source_log, source_cps = await store.read_log(SID), await store.checkpoints(SID)
    source_before = await snapshot(store, SID)
    source_record, writes = await store.get_session(SID), store.write_transactions
    assert source_record is not None

    record = await store.branch(SID, NEW, upto_seq=3)

    assert store.write_transactions == writes + 1
    assert (record.id, record.agent_name, record.status, record.parent_id) == (
        NEW,
        "agent",
        "idle",
        SID,
    )
    assert record.meta == {"m": [1], "n": "x"} and list(record.meta) == ["m", "n"]
    assert record.created_at >= source_record.updated_at
    assert await store.get_session(NEW) == record
    # Same seqs, roles, payloads and created_at.
    assert await store.read_log(NEW) == source_log[:3]
    assert await store.checkpoints(NEW) == [replace(source_cps[0], session_id=NEW)]
    assert await store.last_seq(NEW) == 3
    assert (await snapshot(store, SID))[1:] == source_before[1:]


async def test_branch_never_copies_the_queue_nor_request_keys(store: Store) -> None:
    await branch_source(store)
    source_queue = await pending_context(store, SID)

    await store.branch(SID, NEW, upto_seq=4)

    assert await pending_context(store, NEW) == []
    assert await commit_context(store, NEW) == []
    # Nor the delivered part: cutting the copied context row off the branch redelivers nothing.
    assert (await store.rewind(NEW, 2)).redelivered_entries == []
    # Keys the source used record anew in the branch, even with other items.
    assert await store.enqueue_context(NEW, [notice("x")], source="app", origin=APP, key="q") == 1
    assert await store.enqueue_context(NEW, [notice("y")], source="app", origin=APP, key="k") == 1
    # The item still queued in the source is delivered only there.
    assert await pending_context(store, SID) == source_queue
    [row] = await commit_context(store, SID)
    assert (row.seq, row.payload["content"]) == (5, "queued")
    assert [r.payload["content"] for r in await commit_context(store, NEW)] == ["x", "y"]


async def test_branch_at_zero_is_empty_and_takes_a_given_agent_name(store: Store) -> None:
    await branch_source(store)
    record = await store.branch(SID, NEW, upto_seq=0, agent_name="other")
    assert (record.agent_name, record.parent_id) == ("other", SID)
    assert await store.read_log(NEW) == []
    assert await store.checkpoints(NEW) == []
    [first] = await append_messages(store, NEW, [user("fresh")])
    assert first.seq == 1


async def test_a_branch_and_its_source_change_independently(store: Store) -> None:
    await branch_source(store)
    await store.branch(SID, NEW, upto_seq=4)
    source_before = await snapshot(store, SID)
    # A copied checkpoint id is taken in the branch too, as in any session.
    with pytest.raises(ValueError, match="'cp-b'"):
        await append_messages(store, NEW, [user("x")], checkpoint=checkpoint(id="cp-b"))
    await append_messages(store, NEW, [user("x")], checkpoint=checkpoint(id="cp-c"))
    await store.rewind(NEW, 2)
    await store.update_session_meta(NEW, {"m": None})
    await store.set_status(NEW, "running")
    assert (await snapshot(store, SID))[1:] == source_before[1:]
    assert [r.seq for r in await store.read_log(NEW)] == [1, 2]
    assert [cp.id for cp in await store.checkpoints(NEW)] == ["cp-a"]
    await store.rewind(SID, 2)
    assert [r.seq for r in await store.read_log(NEW)] == [1, 2]


@pytest.mark.parametrize("existing", [SID, "taken"], ids=["the_source", "another"])
async def test_branch_into_an_existing_session_is_refused_and_writes_nothing(
    store: Store, existing: str
) -> None:
    await branch_source(store)
    await session(store, "taken")
    before = await snapshot(store, SID, "taken")
    with pytest.raises(StateError, match=f"'{existing}' already exists") as raised:
        await store.branch(SID, existing, upto_seq=2)
    assert (raised.value.code, raised.value.http_status) == ("state_invalid", 409)
    assert "nothing was written" in raised.value.message
    assert await snapshot(store, SID, "taken") == before


@pytest.mark.parametrize("upto_seq", [-1, 5], ids=["negative", "last_plus_one"])
async def test_branch_refuses_a_seq_out_of_range_and_writes_nothing(
    store: Store, upto_seq: int
) -> None:
    await branch_source(store)
    before = await snapshot(store, SID, NEW)
    with pytest.raises(ValueError, match=f"upto_seq={upto_seq}.*nothing was written"):
        await store.branch(SID, NEW, upto_seq=upto_seq)
    assert await snapshot(store, SID, NEW) == before
    assert await store.get_session(NEW) is None


async def test_branch_from_an_unknown_session_is_refused_and_writes_nothing(
    store: Store,
) -> None:
    before = await snapshot(store, "ghost", NEW)
    with pytest.raises(SessionNotFoundError, match="'ghost'"):
        await store.branch("ghost", NEW, upto_seq=0)
    assert await snapshot(store, "ghost", NEW) == before


# -- what a store accepts: ids, keys, payload text ------------------------------------------

BAD_IDS = {
    "empty": "",
    "nul": "a\x00b",
    "newline": "a\nb",
    "del": "a\x7fb",
    "c1-control": "a\x85b",
    "lone-surrogate": "a\ud800b",
    "too-long": "x" * 513,
}
ID_CALLS: list[Any] = [
    *UNKNOWN_SESSION_CALLS,
    pytest.param(lambda s, sid: s.get_session(sid), id="get_session"),
    pytest.param(lambda s, sid: s.read_snapshot(sid), id="read_snapshot"),
    pytest.param(
        lambda s, sid: s.write_turn(sid, TurnWrite(create=NewSession(agent_name="a"))),
        id="write_turn_create",
    ),
    pytest.param(lambda s, sid: s.branch(SID, sid, upto_seq=0), id="branch_new_id"),
]


@pytest.mark.parametrize("bad", list(BAD_IDS))
@pytest.mark.parametrize("call", ID_CALLS)
async def test_an_invalid_session_id_is_refused_as_invalid_and_nothing_is_written(
    store: Store, call: Call, bad: str
) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises(InvalidRequestError) as raised:
        await call(store, BAD_IDS[bad])
    assert raised.value.http_status == 400
    assert len(raised.value.message) < 300  # never the whole of a long id
    assert await snapshot(store, SID) == before


@pytest.mark.parametrize(
    "sid",
    ["parent/call_abc123", "a/b/c", "é 🙂 x", "y" * 512],
    ids=["slash", "nested", "unicode", "512"],
)
async def test_every_valid_id_round_trips(store: Store, sid: str) -> None:
    await create_session(store, sid, agent_name="agent")
    await append_messages(store, sid, [{"role": "user", "content": "hi"}])
    record = await store.get_session(sid)
    assert record is not None and record.id == sid
    assert [r.payload["content"] for r in await store.read_log(sid)] == ["hi"]


@pytest.mark.parametrize(
    "key", ["", "k\x00", "k\n", "k" * 257], ids=["empty", "nul", "newline", "too-long"]
)
async def test_an_invalid_request_key_is_refused_and_nothing_is_written(
    store: Store, key: str
) -> None:
    await session(store)
    before = await snapshot(store, SID)
    with pytest.raises(InvalidRequestError, match="key"):
        await store.enqueue_context(SID, [notice("x")], source="app", origin=APP, key=key)
    assert await snapshot(store, SID) == before


SURROGATE_WRITES: list[Any] = [
    pytest.param(
        lambda s: append_messages(s, SID, [{"role": "user", "content": "a\udc00"}]), id="message"
    ),
    pytest.param(
        lambda s: append_messages(s, SID, [], checkpoint=checkpoint(state={"x": "\ud800"})),
        id="checkpoint",
    ),
    pytest.param(
        lambda s: s.enqueue_context(SID, [notice("\ud800")], source="app", origin=APP),
        id="queue-item",
    ),
    pytest.param(lambda s: commit_context(s, SID, [notice("\ud800")]), id="extra-row"),
    pytest.param(lambda s: s.update_session_meta(SID, {"x": "\ud800"}), id="meta"),
    pytest.param(
        lambda s: create_session(s, "s-2", agent_name="a", meta={"\ud800": 1}), id="session-meta"
    ),
]


@pytest.mark.parametrize("write", SURROGATE_WRITES)
async def test_a_lone_surrogate_in_a_payload_is_refused_by_every_store_and_nothing_is_written(
    store: Store, write: Callable[[Store], Awaitable[object]]
) -> None:
    await session(store)
    await store.enqueue_context(SID, [notice("q")], source="app", origin=APP)
    before = await snapshot(store, SID, "s-2")
    with pytest.raises(ValueError, match="lone surrogate"):
        await write(store)
    assert await snapshot(store, SID, "s-2") == before


async def test_nul_and_astral_text_in_payloads_round_trip(store: Store) -> None:
    text = "a\x00b 🙂 \u2028"
    await session(store)
    await append_messages(store, SID, [{"role": "user", "content": text}])
    await store.enqueue_context(SID, [notice(text)], source="app", origin=APP)
    await commit_context(store, SID)
    log = await store.read_log(SID)
    assert [r.payload["content"] for r in log] == [text, text]


# -- the queue cap -------------------------------------------------------------------------


def items(n: int, prefix: str = "n") -> list[dict[str, Any]]:
    return [notice(f"{prefix}{i}") for i in range(n)]


async def queued(store: Store, sid: str = SID) -> int:
    return sum(len(e.items) for e in await pending_context(store, sid))


async def test_the_queue_cap_refuses_a_call_that_would_pass_it_whole(capped: Store) -> None:
    await session(capped)
    assert await capped.enqueue_context(SID, items(7), source="app", origin=APP) == 7
    before = await snapshot(capped, SID)
    with pytest.raises(
        ContextValidationError, match=r"already has 7 .* 4 more .* limit of 10"
    ) as raised:
        await capped.enqueue_context(SID, items(4), source="app", origin=APP, key="k")
    assert (raised.value.code, raised.value.http_status) == ("validation_error", 400)
    assert await snapshot(capped, SID) == before
    # Up to the cap is fine; the key of the refused call was not used up.
    assert await capped.enqueue_context(SID, items(3), source="app", origin=APP, key="k") == 3
    assert await queued(capped) == QUEUE_CAP


async def test_a_context_pass_makes_room_and_the_cap_is_per_session(capped: Store) -> None:
    await session(capped)
    await session(capped, "s-2")
    await capped.enqueue_context(SID, items(QUEUE_CAP), source="app", origin=APP)
    assert await capped.enqueue_context("s-2", items(QUEUE_CAP), source="app", origin=APP) == 10
    with pytest.raises(ContextValidationError):
        await capped.enqueue_context(SID, items(1), source="app", origin=APP)
    await commit_context(capped, SID)
    assert await capped.enqueue_context(SID, items(QUEUE_CAP), source="app", origin=APP) == 10


async def test_a_retried_key_is_judged_before_the_cap(capped: Store) -> None:
    await session(capped)
    await capped.enqueue_context(SID, items(QUEUE_CAP), source="app", origin=APP, key="k")
    # The queue is full, yet a retry of the recorded request still answers 0, and other
    # items under that key still conflict: the cap refuses only what would be queued.
    assert (
        await capped.enqueue_context(SID, items(QUEUE_CAP), source="app", origin=APP, key="k") == 0
    )
    with pytest.raises(ContextKeyConflictError):
        await capped.enqueue_context(SID, items(1, "x"), source="app", origin=APP, key="k")


async def test_the_queue_cap_holds_under_concurrent_enqueues(capped: Store) -> None:
    await session(capped)

    async def enqueue(index: int) -> int | str:
        try:
            return await capped.enqueue_context(
                SID, items(3, f"c{index}-"), source="app", origin=APP
            )
        except ContextValidationError:
            return "refused"

    results = await asyncio.gather(*(enqueue(i) for i in range(12)))
    assert results.count(3) == QUEUE_CAP // 3  # 3 calls of 3 fit under 10; the rest are refused
    assert results.count("refused") == 12 - QUEUE_CAP // 3
    assert await queued(capped) == 3 * (QUEUE_CAP // 3)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_max_queued_items_must_be_a_positive_int(tmp_path: Path, bad: Any) -> None:
    makers = [
        lambda: MemoryStore(max_queued_items=bad),
        lambda: SQLiteStore(tmp_path / "x.db", max_queued_items=bad),
        lambda: PostgresStore(_pg.DSN, max_queued_items=bad),  # connects on first use only
    ]
    for make in makers:
        with pytest.raises(ValueError, match="max_queued_items"):
            make()


# -- lifecycle -----------------------------------------------------------------------------


async def test_close_is_idempotent_and_later_calls_fail(store: Store) -> None:
    await session(store)
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError, match="closed"):
        await store.read_log(SID)


def test_the_store_package_exports_exactly_its_public_names() -> None:
    assert sorted(store_pkg.__all__) == sorted(
        [
            "CallLedger",
            "CallRow",
            "CallState",
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
    )
    assert all(hasattr(store_pkg, name) for name in store_pkg.__all__)


# -- SQLite only ---------------------------------------------------------------------------


async def test_sqlite_reopened_from_its_file_has_everything(tmp_path: Path) -> None:
    path = tmp_path / "helix.db"
    first = SQLiteStore(path)
    await create_session(first, SID, agent_name="agent", parent_id="p", meta={"m": 1})
    await create_session(first, "other", agent_name="agent")
    await first.set_status(SID, "paused")
    await append_messages(
        first, SID, [{"role": "user", "content": "q"}], checkpoint=checkpoint(id="c0")
    )
    await first.enqueue_context(SID, [notice("delivered")], source="app", origin=APP, key="k1")
    await commit_context(first, SID, [{"kind": "notice", "content": "m", "source": "memory"}])
    await append_messages(
        first, SID, [{"role": "assistant", "content": "a"}], checkpoint=checkpoint(step_number=1)
    )
    await first.enqueue_context(SID, [notice("queued")], source="tool", origin=APP, key="k2")
    before = await snapshot(first, SID, "other")
    await first.close()

    second = SQLiteStore(path)
    try:
        assert await snapshot(second, SID, "other") == (0, *before[1:])
        # Keys survived too: a repeat records nothing, other items conflict.
        assert (
            await second.enqueue_context(
                SID, [notice("delivered")], source="app", origin=APP, key="k1"
            )
            == 0
        )
        with pytest.raises(ContextKeyConflictError):
            await second.enqueue_context(SID, [notice("x")], source="app", origin=APP, key="k2")
        [row] = await commit_context(second, SID)
        assert (row.seq, row.payload["content"]) == (5, "queued")
    finally:
        await second.close()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchall() == [(1,)]
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_sqlite_rewind_branch_and_meta_survive_reopening(tmp_path: Path) -> None:
    path = tmp_path / "helix.db"
    first = SQLiteStore(path)
    await create_session(first, SID, agent_name="agent", meta={"m": 1, "gone": 2})
    await first.update_session_meta(SID, {"gone": None, "n": [3]})
    await append_messages(first, SID, [user("q"), calling("c1"), answer("c1")])
    app = await first.enqueue_context(SID, [notice("app")], source="app", origin=APP, key="a")
    tool = await enqueue_tool(first, "c1", "tool")
    await commit_context(first, SID)  # rows 4 and 5
    await append_messages(
        first, SID, [{"role": "assistant", "content": "r"}], checkpoint=checkpoint()
    )
    await first.branch(SID, NEW, upto_seq=5, agent_name="other")
    result = await first.rewind(SID, 1)
    assert (app, len(result.redelivered_entries), result.dropped_entries) == (1, 1, [tool.id])
    before = await snapshot(first, SID, NEW)
    await first.close()

    second = SQLiteStore(path)
    try:
        assert await snapshot(second, SID, NEW) == (0, *before[1:])
        record = await second.get_session(SID)
        assert record is not None and record.meta == {"m": 1, "n": [3]}
        assert await second.last_seq(SID) == 1 and await second.last_seq(NEW) == 5
        # The redelivered entry is delivered once more, the dropped one's key is free again,
        # and the branch has no keys of its own yet.
        assert [r.payload["content"] for r in await commit_context(second, SID)] == ["app"]
        assert await commit_context(second, SID) == []
        assert (
            await second.enqueue_context(
                SID, [notice("x")], source="tool", origin=tool_origin("c1"), key="call:c1:0"
            )
            == 1
        )
        assert (
            await second.enqueue_context(NEW, [notice("y")], source="app", origin=APP, key="a") == 1
        )
    finally:
        await second.close()


async def test_sqlite_two_stores_on_one_file_record_a_key_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    a, b = SQLiteStore(path), SQLiteStore(path)
    try:
        await asyncio.gather(
            create_session(a, SID, agent_name="x"), create_session(b, SID, agent_name="y")
        )
        items = [notice("a")]
        results = await asyncio.gather(
            *(
                (a if i % 2 else b).enqueue_context(SID, items, source="app", origin=APP, key="k")
                for i in range(20)
            )
        )
        assert sorted(results) == [0] * 19 + [1]
        assert [e.items for e in await pending_context(a, SID)] == [items]
        assert await pending_context(b, SID) == await pending_context(a, SID)
        assert a.write_transactions + b.write_transactions == 2  # one session, one entry
    finally:
        await a.close()
        await b.close()


async def test_sqlite_in_memory_database_works(tmp_path: Path) -> None:
    store = SQLiteStore(":memory:")
    try:
        await create_session(store, SID, agent_name="agent")
        await store.enqueue_context(SID, [notice("a")], source="app", origin=APP)
        rows = await commit_context(store, SID)
        assert await store.read_log(SID) == rows
    finally:
        await store.close()
    assert not list(tmp_path.iterdir())


async def test_sqlite_runs_calls_on_the_loop_and_waits_for_a_lock_on_its_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    statements: list[tuple[bool, str]] = []  # (on the loop's thread, sql)
    real_connect = sqlite3.connect

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = real_connect(*args, **kwargs)
        conn.set_trace_callback(
            lambda sql: statements.append((threading.get_ident() == loop_thread, sql))
        )
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    store = SQLiteStore(tmp_path / "t.db")
    other = real_connect(tmp_path / "t.db", isolation_level=None)
    try:
        await create_session(store, SID, agent_name="agent")
        # Opening (the WAL switch and the schema, which may wait for another opener) runs on
        # the thread; the call itself on the loop.
        opening = [on_loop for on_loop, sql in statements if "CREATE" in sql or "journal" in sql]
        assert opening and not any(opening)
        assert [on_loop for on_loop, sql in statements if "INTO sessions" in sql] == [True]
        statements.clear()
        await store.enqueue_context(SID, [notice("a")], source="app", origin=APP, key="k")
        await commit_context(store, SID)
        assert statements and all(on_loop for on_loop, _ in statements)
        statements.clear()
        # Another connection holds the write lock: the call goes to the thread and waits there,
        # while the loop goes on.
        other.execute("BEGIN IMMEDIATE")
        call = asyncio.ensure_future(
            append_messages(store, SID, [{"role": "user", "content": "q"}])
        )
        started = time.monotonic()
        await asyncio.sleep(0.2)
        assert time.monotonic() - started < 1.0 and not call.done()
        other.execute("COMMIT")
        await asyncio.wait_for(call, 10)
        assert [on_loop for on_loop, sql in statements if sql == "BEGIN IMMEDIATE"] == [True, False]
        assert [r.payload for r in await store.read_log(SID)][-1] == {
            "role": "user",
            "content": "q",
        }
    finally:
        other.close()
        await store.close()


async def test_sqlite_checkpoints_the_wal_on_its_thread_never_on_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helix_stream.store.sqlite import _db as _sqlite_db

    loop_thread = threading.get_ident()
    checkpoints: list[bool] = []  # on the loop's thread?
    real_connect = sqlite3.connect

    def traced_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = real_connect(*args, **kwargs)
        conn.set_trace_callback(
            lambda sql: (
                checkpoints.append(threading.get_ident() == loop_thread)
                if "wal_checkpoint" in sql
                else None
            )
        )
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced_connect)
    monkeypatch.setattr(_sqlite_db, "CHECKPOINT_EVERY", 5)
    store = SQLiteStore(tmp_path / "t.db")
    try:
        await create_session(store, SID, agent_name="agent")
        for i in range(11):
            await append_messages(store, SID, [{"role": "user", "content": str(i)}])
    finally:
        await store.close()  # after the queued checkpoints
    assert checkpoints == [False, False]  # after writes 5 and 10, on the thread


async def test_sqlite_lookups_use_indexes_on_a_long_session(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "big.db")
    try:
        await create_session(store, SID, agent_name="agent")
        await append_messages(
            store, SID, [{"role": "user", "content": str(i)} for i in range(10_000)]
        )
        await store.enqueue_context(SID, [notice("a")], source="app", origin=APP)
        assert [r.seq for r in await store.read_log(SID, after_seq=9_998)] == [9_999, 10_000]
        [row] = await commit_context(store, SID)
        assert row.seq == 10_001
    finally:
        await store.close()
    with closing(sqlite3.connect(tmp_path / "big.db")) as conn:
        plans = {}
        for sql, args in (
            (SQL_READ_LOG, (SID, 9_998)),
            (SQL_PENDING, (SID,)),
            (SQL_LAST_SEQ, (SID,)),
            (SQL_REWIND_QUEUE, (SID, 9_998)),
            (SQL_CALLS, (SID, 9_998)),
            (SQL_COPY_LOG, ("new", SID, 9_998)),
            (SQL_COPY_CHECKPOINTS, ("new", SID, 9_998)),
        ):
            plan = " ".join(
                str(step[3]) for step in conn.execute("EXPLAIN QUERY PLAN " + sql, args)
            )
            assert "USING" in plan and "INDEX" in plan, plan
            assert "SCAN" not in plan, plan
            plans[sql] = plan
        # The pending lookup must not walk the delivered history through the wider index.
        assert "context_queue_pending" in plans[SQL_PENDING]


async def test_sqlite_refuses_a_file_with_another_schema_version(tmp_path: Path) -> None:
    from helix_stream.errors import FrameworkNotSupportedError

    path = tmp_path / "future.db"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_version VALUES (2)")
    store = SQLiteStore(path)
    try:
        with pytest.raises(FrameworkNotSupportedError, match="version 2"):
            await store.get_session(SID)
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        tables = {
            name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    assert tables == {"schema_version"}


def test_payload_json_is_compact_and_keeps_unicode() -> None:
    from helix_stream.store._shared import encode

    assert encode({"b": "é", "a": [1, 2]}) == '{"b":"é","a":[1,2]}'
    assert json.loads(encode({"b": 1, "a": 2})) == {"b": 1, "a": 2}
