"""PostgresStore when its connections die: a backend ended, a COMMIT cut off, a server away.

Connections are ended with ``pg_terminate_backend`` filtered by the store's own
``application_name`` (a fresh schema per test, so no other test's or session's connection is
touched), or cut by a relay (``_pg_proxy``) at the moment around ``COMMIT`` a real network
would choose worst. Skipped, with the reason, where no PostgreSQL answers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import psycopg
import pytest

from helix_stream.errors import StoreCommitUnknownError, StoreUnavailableError
from helix_stream.store import Checkpoint, PostgresStore
from tests._store import append_messages, commit_context, create_session, pending_context
from tests.store import _pg
from tests.store._pg import backends, fill_pool, terminate
from tests.store._pg_proxy import Fault, PgProxy

SID = "s-1"
APP: dict[str, Any] = {"type": "app"}


def notice(text: str) -> dict[str, Any]:
    return {"kind": "notice", "content": text}


@pytest.fixture
async def store() -> AsyncIterator[PostgresStore]:
    made = _pg.make_store(min_size=4, max_size=4)
    yield made
    await made.close()


# -- the application name --------------------------------------------------------------------


async def test_the_store_names_its_connections_after_its_schema(store: PostgresStore) -> None:
    assert store.application_name == f"helix_stream:{store.schema}"
    await fill_pool(store, 4)
    assert await backends(store.application_name) == 4


async def test_an_application_name_given_or_in_the_dsn_is_kept() -> None:
    given = _pg.make_store(application_name="my-app")
    from_dsn = PostgresStore(_pg.DSN + "?application_name=from-dsn", schema=_pg.new_schema())
    try:
        assert (given.application_name, from_dsn.application_name) == ("my-app", "from-dsn")
        await from_dsn.get_session(SID)
        assert await backends("from-dsn") >= 1
    finally:
        await given.close()
        await from_dsn.close()


# -- every pooled connection ended at once -----------------------------------------------------


def _calls(store: PostgresStore) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    """One of each kind of call, in the order a turn makes them."""
    return [
        ("get_session", lambda: store.get_session(SID)),
        ("set_status", lambda: store.set_status(SID, "running", expect=["idle"])),
        (
            "append_messages",
            lambda: append_messages(store, SID, [{"role": "user", "content": "Hi"}]),
        ),
        (
            "enqueue_context",
            lambda: store.enqueue_context(SID, [notice("n")], source="app", origin=APP),
        ),
        ("commit_context", lambda: commit_context(store, SID)),
        ("read_log", lambda: store.read_log(SID)),
        ("update_session_meta", lambda: store.update_session_meta(SID, {"turns": 1})),
        ("set_status idle", lambda: store.set_status(SID, "idle")),
    ]


async def test_every_call_after_the_pools_connections_are_ended_succeeds(
    store: PostgresStore, caplog: pytest.LogCaptureFixture
) -> None:
    await create_session(store, SID, agent_name="agent")
    await fill_pool(store, 4)
    assert await terminate(store.application_name) == 4
    failed: list[str] = []
    with caplog.at_level(logging.WARNING, logger="helix_stream.store"):
        for name, call in _calls(store):
            try:
                await call()
            except Exception as exc:
                failed.append(f"{name}: {type(exc).__name__}")
    assert failed == []
    # Each write was applied exactly once.
    log = await store.read_log(SID)
    assert [(r.seq, r.role) for r in log] == [(1, "user"), (2, "context")]
    assert [e.items for e in await _pg.delivered_entries(store, SID)] == [[notice("n")]]
    assert await pending_context(store, SID) == []
    session = await store.get_session(SID)
    assert session is not None
    assert (session.status, session.meta) == ("idle", {"turns": 1})
    assert store.write_transactions == 7  # create, then the six writes above
    # The loss was logged, in one short line per call that met it.
    lost = [r for r in caplog.records if "connection lost" in r.getMessage()]
    assert lost and all("\n" not in r.getMessage() for r in lost)


async def test_calls_running_when_the_connections_are_ended_are_retried(
    store: PostgresStore,
) -> None:
    await create_session(store, SID, agent_name="agent")
    await fill_pool(store, 4)

    async def enqueue(index: int) -> int:
        return await store.enqueue_context(
            SID, [notice(f"n{index}")], source="app", origin=APP, key=f"k{index}"
        )

    # Eight writes on four connections, the connections ended while they queue for them.
    writes = [asyncio.create_task(enqueue(i)) for i in range(8)]
    await asyncio.sleep(0)
    await terminate(store.application_name)
    assert await asyncio.gather(*writes) == [1] * 8
    pending = await pending_context(store, SID)
    assert sorted(e.key or "" for e in pending) == [f"k{i}" for i in range(8)]


# -- a connection cut around COMMIT -------------------------------------------------------------


@pytest.fixture
async def proxy() -> AsyncIterator[PgProxy]:
    _pg.require()
    info = psycopg.conninfo.conninfo_to_dict(_pg.DSN)
    async with PgProxy(str(info.get("host", "127.0.0.1")), int(info.get("port", 5432))) as made:
        yield made


def _proxied(proxy: PgProxy, **kwargs: Any) -> PostgresStore:
    info = psycopg.conninfo.conninfo_to_dict(_pg.DSN)
    dsn = proxy.dsn(str(info.get("user", "postgres")), str(info.get("dbname", "test")))
    return PostgresStore(dsn, schema=_pg.new_schema(), **kwargs)


WRITES: dict[str, Callable[[PostgresStore], Awaitable[Any]]] = {
    "enqueue_context": lambda s: s.enqueue_context(SID, [notice("once")], source="app", origin=APP),
    "append_messages": lambda s: append_messages(
        s,
        SID,
        [{"role": "assistant", "content": "once"}],
        checkpoint=Checkpoint(
            id="", session_id=SID, step_number=0, log_seq=0, state={}, created_at=0
        ),
    ),
}


async def _written(store: PostgresStore, write: str) -> list[Any]:
    if write == "enqueue_context":
        return [e.items for e in await pending_context(store, SID)]
    return [(r.role, r.payload) for r in await store.read_log(SID)] + [
        (c.step_number, c.log_seq) for c in await store.checkpoints(SID)
    ]


EXPECTED: dict[str, list[Any]] = {
    "enqueue_context": [[notice("once")]],
    "append_messages": [("assistant", {"role": "assistant", "content": "once"}), (0, 1)],
}


@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("fault", ["drop-commit", "lose-commit-reply", "hold-commit"])
async def test_a_write_whose_commit_was_cut_off_is_applied_exactly_once(
    proxy: PgProxy, fault: Fault, write: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = _proxied(proxy)
    try:
        await create_session(store, SID, agent_name="agent")
        before = store.write_transactions
        proxy.arm(fault)
        with caplog.at_level(logging.WARNING, logger="helix_stream.store"):
            await WRITES[write](store)
        assert proxy.triggered == [fault]
        if fault == "lose-commit-reply":
            assert proxy.server_committed.is_set()  # the first try did commit
        if fault == "hold-commit":  # settled by ending the backend that still held it
            assert any("still held the transaction" in r.getMessage() for r in caplog.records)
        assert await _written(store, write) == EXPECTED[write]
        assert store.write_transactions == before + 1
    finally:
        await store.close()


async def test_a_held_transaction_is_ended_by_its_own_pid_and_xid_only(proxy: PgProxy) -> None:
    store = _proxied(proxy)
    try:
        await create_session(store, SID, agent_name="agent")
        # Another connection of the same application, idle in a transaction of its own: the
        # store must not end it while settling its own lost COMMIT.
        async with await psycopg.AsyncConnection.connect(
            _pg.DSN, application_name=store.application_name
        ) as bystander:
            await bystander.execute("SELECT txid_current()")  # holds a transaction open
            proxy.arm("hold-commit")
            await WRITES["enqueue_context"](store)
            await bystander.execute("SELECT 1")  # still alive
            await bystander.rollback()
        assert await _written(store, "enqueue_context") == EXPECTED["enqueue_context"]
    finally:
        await store.close()


# -- a server that stays away ------------------------------------------------------------------


async def test_a_server_that_stays_away_fails_the_call_typed_and_writes_nothing(
    proxy: PgProxy,
) -> None:
    store = _proxied(proxy, timeout=1.0)
    try:
        await create_session(store, SID, agent_name="agent")
        proxy.refuse = True
        proxy.cut_all()
        with pytest.raises(StoreUnavailableError) as caught:
            await WRITES["enqueue_context"](store)
        assert caught.value.retryable and caught.value.http_status == 503
        assert not isinstance(caught.value, StoreCommitUnknownError)
        proxy.refuse = False
        # The pool reconnects with a backoff: the store is usable again within seconds.
        deadline = time.monotonic() + 30
        while True:
            try:
                pending = await pending_context(store, SID)
                break
            except StoreUnavailableError:
                assert time.monotonic() < deadline
        assert pending == []
    finally:
        await store.close()


async def test_a_server_down_at_first_use_is_a_typed_error(proxy: PgProxy) -> None:
    proxy.refuse = True
    store = _proxied(proxy)
    try:
        with pytest.raises(StoreUnavailableError, match="could not be reached to open the store"):
            await store.get_session(SID)
    finally:
        await store.close()
