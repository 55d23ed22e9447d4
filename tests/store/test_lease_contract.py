"""The lease contract (``TurnWrite.lease``), on every store: a claim takes the lease, its
turn's writes are fenced by the token and renew it, an expired lease is taken over by exactly
one of two racing claims, and a late write of the old owner is refused with nothing written.
SQLite and PostgreSQL files made before the lease get it when opened (SQLite: new columns;
PostgreSQL: migration 3), and what they left ``running`` is free.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest

from helix_stream.errors import SessionLeaseLostError
from helix_stream.store import Lease, SQLiteStore, Store, TurnWrite
from tests.store import _pg
from tests.store.test_contract import STORES, session, snapshot

SID = "s-lease"
RUNNABLE = ("idle", "paused", "failed")


@pytest.fixture(params=list(STORES))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    made = STORES[request.param](tmp_path)
    yield made
    await made.close()


def lease(seconds: float = 10.0) -> Lease:
    return Lease(token=uuid.uuid4().hex, seconds=seconds)


async def claim(store: Store, held: Lease, sid: str = SID) -> bool:
    write = TurnWrite(expect=RUNNABLE, status="running", lease=held)
    return (await store.write_turn(sid, write)).applied


async def test_a_claim_takes_the_lease_and_a_heartbeat_renews_it_without_touching_updated_at(
    store: Store,
) -> None:
    await session(store, SID)
    held = lease(5.0)
    before = time.time()
    assert await claim(store, held)
    record = await store.get_session(SID)
    assert record is not None and record.status == "running"
    assert record.lease_token == held.token
    assert record.lease_expires is not None and before + 5.0 <= record.lease_expires
    await asyncio.sleep(0.05)
    renewed = (await store.write_turn(SID, TurnWrite(lease=held))).session
    assert renewed.lease_expires is not None and renewed.lease_expires > record.lease_expires
    assert renewed.updated_at == record.updated_at  # a heartbeat is not a change of the session
    assert await store.get_session(SID) == renewed


async def test_a_live_lease_keeps_the_session_and_the_final_status_releases_it(
    store: Store,
) -> None:
    await session(store, SID)
    held = lease()
    assert await claim(store, held)
    assert not await claim(store, lease())  # held: busy
    done = await store.write_turn(SID, TurnWrite(status="idle", lease=held))
    assert done.session.status == "idle"
    assert (done.session.lease_token, done.session.lease_expires) == (None, None)
    assert await claim(store, lease())


async def test_an_expired_lease_is_taken_over_and_the_old_owner_is_fenced_out(
    store: Store,
) -> None:
    await session(store, SID)
    old = lease(0.05)
    assert await claim(store, old)
    await asyncio.sleep(0.1)  # the old owner died: no heartbeat
    new = lease()
    assert await claim(store, new)
    taken = await snapshot(store, SID)
    # Its late heartbeat, its step, its final status: all refused, nothing written.
    late = (
        TurnWrite(lease=old),
        TurnWrite(lease=old, messages=[{"role": "assistant", "content": "late"}]),
        TurnWrite(lease=old, status="idle"),
        TurnWrite(lease=old, status="failed"),
    )
    for write in late:
        with pytest.raises(SessionLeaseLostError, match="took the session over"):
            await store.write_turn(SID, write)
    assert await snapshot(store, SID) == taken
    record = await store.get_session(SID)
    assert record is not None and record.lease_token == new.token and record.status == "running"


async def test_two_racing_takeovers_of_an_expired_lease_let_exactly_one_win(
    store: Store,
) -> None:
    await session(store, SID)
    assert await claim(store, lease(0.05))
    await asyncio.sleep(0.1)
    takers = [lease() for _ in range(8)]
    results = await asyncio.gather(*(claim(store, held) for held in takers))
    assert results.count(True) == 1
    winner = takers[results.index(True)]
    record = await store.get_session(SID)
    assert record is not None and record.lease_token == winner.token
    for loser in (t for t, won in zip(takers, results, strict=True) if not won):
        with pytest.raises(SessionLeaseLostError):
            await store.write_turn(SID, TurnWrite(lease=loser))


async def test_the_old_owner_goes_on_while_nobody_took_its_expired_lease(store: Store) -> None:
    # Fencing is by token: a slow owner whose lease ran out but was not taken over keeps the
    # session, and its final write releases it (what a turn whose store was away does).
    await session(store, SID)
    slow = lease(0.05)
    assert await claim(store, slow)
    await asyncio.sleep(0.1)
    record = await store.get_session(SID)
    assert record is not None and record.lease_expired(time.time())
    assert (await store.write_turn(SID, TurnWrite(lease=slow))).applied
    done = await store.write_turn(SID, TurnWrite(lease=slow, status="idle"))
    assert done.session.status == "idle" and done.session.lease_token is None


async def test_running_set_by_hand_has_no_lease_and_is_never_taken_over(store: Store) -> None:
    await session(store, SID)
    assert await store.set_status(SID, "running")
    record = await store.get_session(SID)
    assert record is not None and record.lease_expires is None
    assert not record.lease_expired(time.time() + 3600)
    assert not await claim(store, lease())


async def test_a_bad_lease_is_refused_before_anything_is_written(store: Store) -> None:
    await session(store, SID)
    before = await snapshot(store, SID)
    for bad in (Lease(token="", seconds=1.0), Lease(token="t", seconds=0.0)):
        with pytest.raises(ValueError, match="lease"):
            await claim(store, bad)
    assert await snapshot(store, SID) == before


def test_lease_options_are_checked(tmp_path: Path) -> None:
    for name, make in STORES.items():
        if name == "postgres" and _pg.unreachable():
            continue
        made = make(tmp_path)
        assert (made.lease_seconds, made.lease_renew_seconds) == (10.0, 3.0)  # type: ignore[attr-defined]
        for bad in ({"lease_seconds": 0}, {"lease_renew_seconds": -1}, {"lease_seconds": 2.0}):
            with pytest.raises(ValueError, match="lease"):
                make(tmp_path, **bad)


_OLD_SQLITE = (
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    "INSERT INTO schema_version VALUES (1)",
    """CREATE TABLE sessions (
        id TEXT PRIMARY KEY, agent_name TEXT NOT NULL, status TEXT NOT NULL, parent_id TEXT,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, meta TEXT NOT NULL)""",
    "INSERT INTO sessions VALUES ('stuck', 'agent', 'running', NULL, 1.0, 1.0, '{}')",
    "INSERT INTO sessions VALUES ('calm', 'agent', 'idle', NULL, 1.0, 1.0, '{}')",
)


async def test_an_sqlite_file_made_before_the_lease_gets_it_and_frees_what_it_left_running(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path)) as conn:
        for statement in _OLD_SQLITE:
            conn.execute(statement)
        conn.commit()
    store = SQLiteStore(path)
    try:
        stuck = await store.get_session("stuck")
        calm = await store.get_session("calm")
        assert stuck is not None and stuck.lease_expired(time.time())
        assert calm is not None and calm.lease_expires is None
        assert await claim(store, lease(), "stuck")
    finally:
        await store.close()


async def test_a_postgres_schema_before_migration_3_gets_it_and_frees_what_it_left_running() -> (
    None
):
    from helix_stream.store.postgres import _schema

    schema = _pg.new_schema()
    import psycopg

    ident = f'"{schema}"'
    async with await psycopg.AsyncConnection.connect(_pg.DSN, autocommit=True) as conn:
        old = _schema.MIGRATIONS
        _schema.MIGRATIONS = old[:2]
        _schema.LATEST_VERSION = 2
        try:
            await _schema.migrate(conn, ident, schema)
        finally:
            _schema.MIGRATIONS, _schema.LATEST_VERSION = old, old[-1].version
        await conn.execute(
            f"INSERT INTO {ident}.sessions (id, agent_name, status, created_at, updated_at, meta)"
            " VALUES ('stuck', 'agent', 'running', 1, 1, '{}')"
        )
    store = _pg.make_store(schema)
    try:
        stuck = await store.get_session("stuck")
        assert stuck is not None and stuck.lease_expired(time.time())
        assert await claim(store, lease(), "stuck")
    finally:
        await store.close()
