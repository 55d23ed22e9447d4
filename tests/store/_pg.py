"""The PostgreSQL the tests run against, and a fresh schema per test.

``HELIX_TEST_POSTGRES_DSN`` names the server (default: the local one, database ``test``).
Every PostgresStore a test makes gets a schema of its own (``helix_t_<pid>_<random>``), so
runs in parallel — or by several people on one server — never see each other's sessions;
:func:`drop_schemas` removes them after the test. Where no server answers, every postgres
test is skipped with the reason "PostgreSQL not reachable at ...", and the run's summary says
so too: never silently.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
import uuid
from typing import Any

import pytest

from helix_stream.store import PostgresStore, QueueEntry
from helix_stream.store._shared import queue_entries_from_rows

DSN = os.environ.get("HELIX_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")

_made: list[str] = []
_reported = False


@functools.cache
def unreachable() -> str | None:
    """Why the server cannot be used, or ``None`` when it answers (asked once per run)."""
    import psycopg  # here, so that memory and sqlite tests never need it

    try:
        with psycopg.connect(DSN, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        return f"PostgreSQL not reachable at {DSN}: {str(exc).strip()}"
    return None


def require() -> None:
    """Skip the calling test, with the reason, unless the server answers."""
    reason = unreachable()
    if reason is not None:
        pytest.skip(reason)


def new_schema() -> str:
    """A schema name no other test or run uses; dropped by :func:`drop_schemas`."""
    require()
    name = f"helix_t_{os.getpid()}_{uuid.uuid4().hex[:12]}"
    _made.append(name)
    return name


def make_store(schema: str | None = None, **kwargs: Any) -> PostgresStore:
    """A PostgresStore on a fresh schema (or on ``schema``); skips if there is no server."""
    return PostgresStore(DSN, schema=schema or new_schema(), **kwargs)


async def terminate(application_name: str) -> int:
    """End every backend with this application_name (only the store's); return how many."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def backends(application_name: str) -> int:
    """How many backends have this application_name."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def fill_pool(store: PostgresStore, size: int, session_id: str = "s-1") -> None:
    """Make the pool hold ``size`` open connections (several die at once in a restart)."""
    await store.get_session(session_id)
    deadline = time.monotonic() + 10
    while await backends(store.application_name) < size:
        assert time.monotonic() < deadline, "the pool did not open its connections"
        await asyncio.sleep(0.05)


async def delivered_entries(store: PostgresStore, session_id: str) -> list[QueueEntry]:
    """The session's delivered queue entries, read from the store's table (the ``Store``
    protocol shows only the undelivered ones), in id order."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT id, items::text, source, key, origin::text, created_at, delivered_seq"
            f' FROM "{store.schema}".context_queue'
            " WHERE session_id = %s AND delivered_seq IS NOT NULL ORDER BY id",
            (session_id,),
        )
        return queue_entries_from_rows(await cur.fetchall())


def drop_schemas() -> None:
    """Drop every schema made since the last call (the test's stores are closed by then)."""
    if not _made:
        return
    import psycopg

    with psycopg.connect(DSN, autocommit=True) as conn:
        while _made:
            conn.execute(f'DROP SCHEMA IF EXISTS "{_made.pop()}" CASCADE')


def report(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly, in the run's summary, that the postgres tests were skipped, and why."""
    global _reported
    if _reported or unreachable.cache_info().currsize == 0:
        return
    reason = unreachable()
    if reason is not None:
        _reported = True
        skipped = len(
            [
                r
                for r in terminalreporter.stats.get("skipped", [])
                if "PostgreSQL" in str(r.longrepr)
            ]
        )
        terminalreporter.write_sep("!", "POSTGRES TESTS SKIPPED", red=True, bold=True)
        terminalreporter.write_line(
            f"{skipped} PostgresStore test{'' if skipped == 1 else 's'} did not run: {reason}",
            yellow=True,
            bold=True,
        )
        terminalreporter.write_line(
            "Start the machine's PostgreSQL (`make test` and .ci/run do when it is installed), "
            "or set HELIX_TEST_POSTGRES_DSN.",
            yellow=True,
        )
