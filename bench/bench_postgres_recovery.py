"""How PostgresStore recovers when every pooled connection dies at once, beside the two
alternatives, and what surviving costs a call when nothing dies.

Run: ``.venv/bin/python bench/bench_postgres_recovery.py [DSN] [--rounds N]`` (or ``make
bench``). The DSN defaults to ``$HELIX_BENCH_POSTGRES_DSN``, else the local server's database
``test``. Without a reachable server it says so and exits 0.

Each round fills a pool of 4 connections, ends them all with ``pg_terminate_backend`` (only
this process's: filtered by an application_name of its own), then makes 8 calls one after the
other, and counts the calls that failed and the time from the termination to the first call
that succeeded:

- ``plain pool``: ``psycopg_pool.AsyncConnectionPool`` as the store used it before (every dead
  connection fails the call that meets it);
- ``pool check=``: the same pool with ``check=AsyncConnectionPool.check_connection`` (each
  connection is tested when handed out);
- ``PostgresStore``: the store's own calls (get_session, set_status, a write_turn of messages,
  enqueue_context, a write_turn of the queue, read_log, update_session_meta, set_status), which
  retry once
  after ``pool.check()``.

Then, with nothing failing, the median latency of the store's calls (``--steady`` only), to
compare with an earlier checkout by running the same script there.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import _common  # noqa: F401  (puts the repo on sys.path)

from helix_stream.store import NewSession, PostgresStore, TurnWrite

DSN = os.environ.get("HELIX_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
POOL, CALLS = 4, 8
SID = "bench-1"


async def terminate(dsn: str, application_name: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s AND pid <> pg_backend_pid()",
            (application_name,),
        )
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def wait_for_backends(dsn: str, application_name: str, count: int) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        for _ in range(200):
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                (application_name,),
            )
            row = await cur.fetchone()
            if row and row[0] >= count:
                return
            await asyncio.sleep(0.05)
    raise RuntimeError("the pool did not open its connections")


async def run_calls(
    calls: list[Callable[[], Awaitable[Any]]], start: float
) -> tuple[int, float | None, float]:
    """(calls failed, seconds to the first success, seconds for all) after ``start``."""
    failed, first = 0, None
    for call in calls:
        try:
            await call()
        except Exception:
            failed += 1
            continue
        if first is None:
            first = time.perf_counter() - start
    return failed, first, time.perf_counter() - start


async def round_pool(dsn: str, *, check: bool) -> tuple[int, float | None, float]:
    from psycopg_pool import AsyncConnectionPool

    name = f"helix_bench_{uuid.uuid4().hex[:8]}"
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn,
        min_size=POOL,
        max_size=POOL,
        timeout=10.0,
        open=False,
        kwargs={"autocommit": True, "application_name": name},
        check=AsyncConnectionPool.check_connection if check else None,
    )
    await pool.open(wait=True)
    try:
        await wait_for_backends(dsn, name, POOL)

        async def call() -> None:
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")

        await terminate(dsn, name)
        return await run_calls([call] * CALLS, time.perf_counter())
    finally:
        await pool.close()


def store_calls(store: PostgresStore) -> list[Callable[[], Awaitable[Any]]]:
    notice = {"kind": "notice", "content": "n"}
    return [
        lambda: store.get_session(SID),
        lambda: store.set_status(SID, "running", expect=["idle"]),
        lambda: store.write_turn(SID, TurnWrite(messages=[{"role": "user", "content": "Hi"}])),
        lambda: store.enqueue_context(SID, [notice], source="app", origin={"type": "app"}),
        lambda: store.write_turn(SID, TurnWrite(deliver_queue=True)),
        lambda: store.read_log(SID),
        lambda: store.update_session_meta(SID, {"turns": 1}),
        lambda: store.set_status(SID, "idle"),
    ]


async def round_store(dsn: str, schema: str) -> tuple[int, float | None, float]:
    store = PostgresStore(dsn, schema=schema, min_size=POOL, max_size=POOL)
    try:
        await store.write_turn(SID, TurnWrite(create=NewSession(agent_name="bench")))
        await store.set_status(SID, "idle")
        name = getattr(store, "application_name", None)
        if name is None:  # an older store: no way to end only its connections
            raise SystemExit("this PostgresStore sets no application_name")
        await wait_for_backends(dsn, name, POOL)
        await terminate(dsn, name)
        return await run_calls(store_calls(store), time.perf_counter())
    finally:
        await store.close()


async def steady(dsn: str, schema: str, repeats: int = 300) -> dict[str, float]:
    """Median milliseconds of each store call with nothing failing."""
    store = PostgresStore(dsn, schema=schema, min_size=1, max_size=2)
    times: dict[str, list[float]] = {}
    names = ["get_session", "set_status CAS", "write_turn messages", "enqueue_context"]
    names += ["write_turn queue", "read_log", "update_session_meta", "set_status"]
    try:
        await store.write_turn(SID, TurnWrite(create=NewSession(agent_name="bench")))
        for _ in range(repeats):
            await store.set_status(SID, "idle")
            for name, call in zip(names, store_calls(store), strict=True):
                t0 = time.perf_counter()
                await call()
                times.setdefault(name, []).append(time.perf_counter() - t0)
    finally:
        await store.close()
    return {name: statistics.median(ts) * 1000 for name, ts in times.items()}


def summary(name: str, results: list[tuple[int, float | None, float]]) -> str:
    failed = [f for f, _, _ in results]
    firsts = [f for _, f, _ in results if f is not None]
    first = f"{min(firsts) * 1000:7.1f}–{max(firsts) * 1000:7.1f} ms" if firsts else "never"
    return (
        f"  {name:14s} calls failed {min(failed)}–{max(failed)} of {CALLS}   "
        f"first success after {first}   "
        f"all {CALLS} calls {min(r[2] for r in results) * 1000:7.1f}–"
        f"{max(r[2] for r in results) * 1000:7.1f} ms"
    )


async def main(dsn: str, rounds: int, with_steady: bool) -> int:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=3):
            pass
    except psycopg.OperationalError as exc:
        print(f"PostgreSQL not reachable at {dsn}: {str(exc).strip()} — skipped")
        return 0
    schemas: list[str] = []

    def schema() -> str:
        schemas.append(f"helix_bench_{uuid.uuid4().hex[:12]}")
        return schemas[-1]

    results: dict[str, list[tuple[int, float | None, float]]] = {}
    try:
        for _ in range(rounds):  # interleaved, so that machine noise hits all three alike
            results.setdefault("plain pool", []).append(await round_pool(dsn, check=False))
            results.setdefault("pool check=", []).append(await round_pool(dsn, check=True))
            results.setdefault("PostgresStore", []).append(await round_store(dsn, schema()))
        print(f"every pooled connection ({POOL}) ended, then {CALLS} calls; {rounds} rounds:")
        for name, got in results.items():
            print(summary(name, got))
        if with_steady:
            print("with nothing failing, median ms per call:")
            for name, ms in (await steady(dsn, schema())).items():
                print(f"  {name:20s} {ms:6.3f}")
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name in schemas:
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("dsn", nargs="?", default=DSN)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steady", action="store_true")
    args = parser.parse_args()
    # Every lost connection is logged (psycopg's pool, the store); the figures say it here.
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    logging.getLogger("helix_stream").setLevel(logging.ERROR)
    raise SystemExit(asyncio.run(main(args.dsn, args.rounds, args.steady)))
