"""The context pass of ``bench_context_pass.py`` on PostgresStore, beside SQLiteStore.

Run: ``.venv/bin/python bench/bench_context_pass_postgres.py [DSN]`` (or ``make bench``). The
DSN defaults to ``$HELIX_BENCH_POSTGRES_DSN``, else the local server's database ``test``.

Same measurement, imported from ``bench_context_pass``: the executor's real ContextPass with 10
queued items on a session of 1,000 rows, 200 passes, the queue refilled (untimed) before each.
PostgreSQL runs in a schema of its own, dropped at the end. The budget in the README's Performance table
(median < 2 ms) is SQLite's; PostgreSQL's figure is reported beside it, a network round trip
per statement included. Without a reachable server it says so and exits 0.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

import _common  # noqa: F401  (puts the repo on sys.path)
from bench_context_pass import PASSES, ROWS, measure

import helix_stream as hs
from helix_stream.store import PostgresStore

DSN = os.environ.get("HELIX_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def line(name: str, times: list[float]) -> str:
    q = statistics.quantiles(times, n=20)
    median, p95 = statistics.median(times) * 1000, q[18] * 1000
    return f"  {name:14s} median {median:6.3f} ms   p95 {p95:6.3f} ms"


async def main(dsn: str) -> int:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=3):
            pass
    except psycopg.OperationalError as exc:
        print(f"PostgreSQL not reachable at {dsn}: {str(exc).strip()} — skipped")
        return 0
    schema = f"helix_bench_{uuid.uuid4().hex[:12]}"
    try:
        postgres = await measure(PostgresStore(dsn, schema=schema, max_size=2))
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = await measure(hs.SQLiteStore(str(Path(tmp) / "bench.db")))
    print(f"context pass, 10 queued items, session of {ROWS} rows, {PASSES} passes:")
    print(line("SQLiteStore", sqlite))
    print(line("PostgresStore", postgres))
    print(
        f"  (PostgreSQL at {dsn}; median ratio {statistics.median(postgres) / statistics.median(sqlite):.1f}x SQLite)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else DSN)))
