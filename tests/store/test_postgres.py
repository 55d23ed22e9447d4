"""PostgresStore only: the schema and its migrations, the lazy import, open_store, query plans,
and each concurrency guarantee shown with a transaction of another connection held open.

The contract suite (``test_contract.py``) runs on PostgresStore too; races between real
processes are in ``test_postgres_processes.py``. Skipped, with the reason, where no
PostgreSQL answers.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from helix_stream.errors import FrameworkNotSupportedError
from helix_stream.store import MemoryStore, PostgresStore, SQLiteStore, open_store
from helix_stream.store._shared import items_digest
from helix_stream.store.postgres._read import (
    SQL_CALLS,
    SQL_PENDING,
    SQL_READ_LOG,
    SQL_REWIND_QUEUE,
)
from helix_stream.store.postgres._schema import LATEST_VERSION
from tests._store import append_messages, commit_context, create_session, pending_context
from tests.store import _pg

ROOT = Path(__file__).resolve().parents[2]
SID = "s-1"
APP: dict[str, Any] = {"type": "app"}
TABLES = {
    "checkpoints", "context_keys", "context_queue", "log", "schema_migrations", "sessions",
    "ui_stream_events", "ui_streams", "auth_pending", "auth_tokens", "tool_calls",
}  # fmt: skip


def notice(text: str) -> dict[str, Any]:
    return {"kind": "notice", "content": text}


@pytest.fixture
async def store() -> AsyncIterator[PostgresStore]:
    made = _pg.make_store()
    yield made
    await made.close()


@pytest.fixture
async def other(store: PostgresStore) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A second connection to the store's database, as another process would hold."""
    conn = await psycopg.AsyncConnection.connect(_pg.DSN)
    try:
        await conn.execute(f'SET search_path TO "{store.schema}"')
        await conn.commit()
        yield conn
    finally:
        await conn.close()


def tables(schema: str) -> set[str]:
    with psycopg.connect(_pg.DSN) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
        ).fetchall()
    return {name for (name,) in rows}


async def blocked(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` is still waiting (on a lock) after a moment."""
    await asyncio.sleep(0.3)
    return not task.done()


# -- the schema ----------------------------------------------------------------------------


async def test_the_schema_is_created_on_first_use_with_migration_1_recorded(
    store: PostgresStore,
) -> None:
    assert tables(store.schema) == set()
    await store.get_session(SID)
    assert tables(store.schema) == TABLES
    with psycopg.connect(_pg.DSN) as conn:
        rows = conn.execute(
            f'SELECT version, description FROM "{store.schema}".schema_migrations'
        ).fetchall()
    assert rows == [
        (1, "sessions, log, context_queue, context_keys, checkpoints"),
        (2, "ui_streams, ui_stream_events"),
        (3, "sessions.lease_token, lease_expires"),
        (4, "auth_pending, auth_tokens"),
        (5, "tool_calls"),
    ]
    assert LATEST_VERSION == 5
    assert store.write_transactions == 0  # migrating is not one of the caller's writes
    assert await store.migrate() == []


async def test_stores_starting_together_on_a_new_schema_migrate_it_once() -> None:
    schema = _pg.new_schema()
    stores = [PostgresStore(_pg.DSN, schema=schema) for _ in range(4)]
    try:
        applied = await asyncio.gather(*(s.migrate() for s in stores))
        assert sorted(applied) == [[], [], [], [1, 2, 3, 4, 5]]
        await asyncio.gather(*(create_session(s, SID, agent_name="a") for s in stores))
        assert sum(s.write_transactions for s in stores) == 1
    finally:
        for s in stores:
            await s.close()


async def test_a_schema_with_a_newer_migration_is_refused_and_left_alone() -> None:
    schema = _pg.new_schema()
    with psycopg.connect(_pg.DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(
            f'CREATE TABLE "{schema}".schema_migrations (version integer PRIMARY KEY,'
            " description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute(f"INSERT INTO \"{schema}\".schema_migrations VALUES (99, 'future')")
    store = PostgresStore(_pg.DSN, schema=schema)
    try:
        with pytest.raises(FrameworkNotSupportedError, match="migration 99") as raised:
            await store.get_session(SID)
        assert raised.value.code == "framework_not_supported"
    finally:
        await store.close()
    assert tables(schema) == {"schema_migrations"}


async def test_a_second_store_on_the_schema_sees_everything_the_first_wrote(
    store: PostgresStore,
) -> None:
    await create_session(store, SID, agent_name="agent", meta={"z": 1, "a": 2})
    await append_messages(store, SID, [{"role": "user", "content": "q", "name": "é"}])
    await store.enqueue_context(SID, [notice("queued")], source="app", origin=APP, key="k")
    second = PostgresStore(_pg.DSN, schema=store.schema)
    try:
        assert await second.get_session(SID) == await store.get_session(SID)
        assert await second.read_log(SID) == await store.read_log(SID)
        assert await pending_context(second, SID) == await pending_context(store, SID)
        assert (
            await second.enqueue_context(SID, [notice("queued")], source="app", origin=APP, key="k")
            == 0
        )
        [row] = await commit_context(second, SID)
        assert row.seq == 2 and await store.last_seq(SID) == 2
    finally:
        await second.close()


async def test_payloads_are_json_the_database_can_query(store: PostgresStore) -> None:
    await create_session(store, SID, agent_name="agent")
    await store.enqueue_context(SID, [notice("hello")], source="app", origin=APP)
    await commit_context(store, SID)
    with psycopg.connect(_pg.DSN) as conn:
        row = conn.execute(
            f"SELECT payload->>'content', payload->'origin'->>'type' FROM \"{store.schema}\".log"
        ).fetchone()
    assert row == ("hello", "app")


@pytest.mark.parametrize("schema", ["", "a-b", 'x"; DROP TABLE t; --', "1abc", "s" * 64])
def test_a_schema_that_is_not_a_plain_identifier_is_refused(schema: str) -> None:
    with pytest.raises(ValueError, match="plain identifier"):
        PostgresStore(_pg.DSN, schema=schema)


async def test_a_store_closed_before_first_use_refuses_calls() -> None:
    store = PostgresStore(_pg.DSN, schema=_pg.new_schema())
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError, match="closed"):
        await store.get_session(SID)
    with pytest.raises(RuntimeError, match="closed"):
        await store.migrate()


async def test_lookups_use_indexes_in_a_database_of_many_long_sessions(
    store: PostgresStore,
) -> None:
    await create_session(store, SID, agent_name="agent")
    await append_messages(store, SID, [{"role": "user", "content": str(i)} for i in range(2_000)])
    for i in range(50):
        await store.enqueue_context(SID, [notice(str(i))], source="app", origin=APP)
        await commit_context(store, SID)
    await store.enqueue_context(SID, [notice("pending")], source="app", origin=APP)
    with psycopg.connect(_pg.DSN) as conn:
        conn.execute(f'SET search_path TO "{store.schema}"')
        # 200 other sessions of 500 records and 100 delivered entries each.
        conn.execute(
            "INSERT INTO sessions SELECT 'o' || n, 'a', 'idle', NULL, 0, 0, '{}', 500"
            " FROM generate_series(1, 200) n"
        )
        conn.execute(
            "INSERT INTO log SELECT 'o' || n, seq, 'user', '{}', 0"
            " FROM generate_series(1, 200) n, generate_series(1, 500) seq"
        )
        conn.execute(
            "INSERT INTO context_queue (session_id, items, source, origin, created_at,"
            " delivered_seq) SELECT 'o' || n, '[]', 'app', '{}', 0, i"
            " FROM generate_series(1, 200) n, generate_series(1, 100) i"
        )
        conn.execute("ANALYZE")
        for sql, args in (
            (SQL_READ_LOG, (2_040, SID)),
            (SQL_PENDING, (SID,)),
            (SQL_REWIND_QUEUE, (SID, 2_040)),
            (SQL_CALLS, (SID, 2_040)),
        ):
            query = sql.replace("{s}.", "")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query, args).fetchall())
            assert "Seq Scan on log" not in plan, plan
            assert "Seq Scan on context_queue" not in plan, plan
            assert "Index" in plan, plan
            if sql is SQL_PENDING:
                assert "context_queue_pending" in plan, plan


# -- open_store and the lazy import --------------------------------------------------------


async def test_open_store_picks_the_store_the_url_or_path_names(tmp_path: Path) -> None:
    for url in (_pg.DSN, _pg.DSN.replace("postgresql://", "postgres://", 1)):
        made = open_store(url)
        assert isinstance(made, PostgresStore) and made.schema == "helix"
        await made.close()
    memory = open_store(":memory:")
    assert isinstance(memory, MemoryStore)
    sqlite = open_store(tmp_path / "x.db")
    assert isinstance(sqlite, SQLiteStore) and sqlite.path == str(tmp_path / "x.db")
    await sqlite.close()


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )


def test_importing_the_package_and_its_stores_never_imports_psycopg() -> None:
    out = run_python(
        "import sys, helix_stream as hs, helix_stream.store as st; hs.Store; st.PostgresStore;"
        " st.open_store(':memory:'); print(sorted(m for m in sys.modules if 'psycopg' in m))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_without_psycopg_a_postgres_store_says_to_install_the_extra() -> None:
    out = run_python(
        "import sys; sys.modules['psycopg'] = None\n"
        "from helix_stream.errors import FrameworkNotSupportedError\n"
        "from helix_stream.store import open_store\n"
        "try:\n    open_store('postgresql://localhost/x')\n"
        "except FrameworkNotSupportedError as exc:\n    print(exc.code, '|', exc)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("framework_not_supported | ")
    assert "pip install 'helix-stream[postgres]'" in out.stdout


# -- each guarantee, against a transaction another connection holds open ------------------


async def test_a_compare_and_set_waits_for_a_concurrent_one_then_sees_its_result(
    store: PostgresStore, other: psycopg.AsyncConnection[Any]
) -> None:
    await create_session(store, SID, agent_name="agent")
    await other.execute("UPDATE sessions SET status = 'running' WHERE id = %s", (SID,))
    second = asyncio.create_task(store.set_status(SID, "running", expect=["idle"]))
    assert await blocked(second)  # the row is locked by the uncommitted update
    await other.commit()
    assert await second is False  # re-checked against the committed row: not idle any more
    assert store.write_transactions == 1


async def test_a_same_key_enqueue_waits_for_the_other_claim_and_records_nothing(
    store: PostgresStore, other: psycopg.AsyncConnection[Any]
) -> None:
    await create_session(store, SID, agent_name="agent")
    items = [notice("a")]
    # Another process's enqueue with key "k", claimed but not yet committed.
    await other.execute(
        "INSERT INTO context_queue (id, session_id, items, source, key, origin, created_at)"
        " VALUES (1000, %s, %s, 'app', 'k', '{}', 0)",
        (SID, '[{"kind":"notice","content":"a"}]'),
    )
    await other.execute(
        "INSERT INTO context_keys VALUES (%s, 'k', %s, 1000)",
        (SID, items_digest(items)),
    )
    second = asyncio.create_task(
        store.enqueue_context(SID, items, source="app", origin=APP, key="k")
    )
    assert await blocked(second)
    await other.commit()
    assert await second == 0
    assert [e.id for e in await pending_context(store, SID)] == [1000]
    assert store.write_transactions == 1  # the session only


async def test_a_same_key_enqueue_records_if_the_other_claim_rolls_back(
    store: PostgresStore, other: psycopg.AsyncConnection[Any]
) -> None:
    await create_session(store, SID, agent_name="agent")
    await other.execute(
        "INSERT INTO context_queue (id, session_id, items, source, key, origin, created_at)"
        " VALUES (1000, %s, '[]', 'app', 'k', '{}', 0)",
        (SID,),
    )
    await other.execute("INSERT INTO context_keys VALUES (%s, 'k', 'other', 1000)", (SID,))
    second = asyncio.create_task(
        store.enqueue_context(SID, [notice("a")], source="app", origin=APP, key="k")
    )
    assert await blocked(second)
    await other.rollback()
    assert await second == 1
    assert [e.items for e in await pending_context(store, SID)] == [[notice("a")]]


async def test_a_context_pass_waits_for_another_pass_of_the_session_then_continues_its_seqs(
    store: PostgresStore, other: psycopg.AsyncConnection[Any]
) -> None:
    await create_session(store, SID, agent_name="agent")
    await append_messages(store, SID, [{"role": "user", "content": "q"}])
    await store.enqueue_context(SID, [notice("a")], source="app", origin=APP)
    # Another process's context pass, in progress: it holds the session row's lock.
    await other.execute("SELECT 1 FROM sessions WHERE id = %s FOR NO KEY UPDATE", (SID,))
    await other.execute(
        'INSERT INTO log VALUES (%s, 2, \'context\', \'{"kind":"notice","content":"x"}\', 0)',
        (SID,),
    )
    await other.execute("UPDATE context_queue SET delivered_seq = 2")
    await other.execute("UPDATE sessions SET last_seq = 2")
    pass_here = asyncio.create_task(commit_context(store, SID, [notice("extra")]))
    assert await blocked(pass_here)
    await other.commit()
    [row] = await pass_here  # the queued entry went to the other pass: only the extra row
    assert (row.seq, row.payload) == (3, notice("extra"))
    assert [r.seq for r in await store.read_log(SID)] == [1, 2, 3]


async def test_an_enqueue_during_a_context_pass_neither_waits_nor_is_lost(
    store: PostgresStore, other: psycopg.AsyncConnection[Any]
) -> None:
    await create_session(store, SID, agent_name="agent")
    await store.enqueue_context(SID, [notice("first")], source="app", origin=APP)
    # Another process's context pass: it locked the session and read the queue...
    await other.execute("SELECT last_seq FROM sessions WHERE id = %s FOR NO KEY UPDATE", (SID,))
    cur = await other.execute("SELECT id FROM context_queue WHERE delivered_seq IS NULL")
    taken = [qid for (qid,) in await cur.fetchall()]
    # ...when an add_context arrives here: it does not wait for that pass.
    during = store.enqueue_context(SID, [notice("during")], source="app", origin=APP)
    assert await asyncio.wait_for(during, 5) == 1
    # The pass delivers what it read, and commits.
    await other.execute(
        "INSERT INTO log VALUES (%s, 1, 'context', '{\"content\":\"first\"}', 0)", (SID,)
    )
    await other.execute("UPDATE context_queue SET delivered_seq = 1 WHERE id = ANY(%s)", (taken,))
    await other.execute("UPDATE sessions SET last_seq = 1 WHERE id = %s", (SID,))
    await other.commit()
    # The entry that arrived during it is the next pass's, once.
    [row] = await commit_context(store, SID)
    assert (row.seq, row.payload["content"]) == (2, "during")
    assert await commit_context(store, SID) == []
    assert [len(e.items) for e in await _pg.delivered_entries(store, SID)] == [1, 1]
