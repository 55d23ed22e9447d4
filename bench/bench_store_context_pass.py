"""Benchmark: the store side of one context pass (README, "Performance").

A session of 1,000 log rows; then, 200 times: queue 10 items (ten ``enqueue_context`` calls,
untimed) and time the pass's ``write_turn`` alone (``TurnWrite(deliver_queue=True)``). Prints the median and p95 for SQLiteStore (on a
temporary file) and MemoryStore. The budget is a median under 2 ms on SQLite; the script
exits 1 if it is missed.

Run it from the repository root::

    .venv/bin/python bench/bench_store_context_pass.py
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Standalone script: make the checkout importable without installing it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helix_stream.store import MemoryStore, NewSession, SQLiteStore, Store, TurnWrite

ROWS = 1_000
ROUNDS = 200
ITEMS_PER_PASS = 10
BUDGET_MS = 2.0
SESSION = "bench"


async def measure(store: Store) -> list[float]:
    """Milliseconds per context pass, one per round."""
    await store.write_turn(SESSION, TurnWrite(create=NewSession(agent_name="bench")))
    for start in range(0, ROWS, 100):
        messages = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 8}
            for i in range(start, start + 100)
        ]
        await store.write_turn(SESSION, TurnWrite(messages=messages))
    timings: list[float] = []
    for round_no in range(ROUNDS):
        for i in range(ITEMS_PER_PASS):
            await store.enqueue_context(
                SESSION,
                [{"kind": "notice", "content": f"round {round_no}, item {i}: the user switched"}],
                source="app",
                origin={"type": "app"},
                key=f"r{round_no}-i{i}",
            )
        began = time.perf_counter()
        rows = (await store.write_turn(SESSION, TurnWrite(deliver_queue=True))).records
        timings.append((time.perf_counter() - began) * 1000)
        assert len(rows) == ITEMS_PER_PASS
    return timings


def report(name: str, timings: list[float]) -> float:
    median = statistics.median(timings)
    p95 = statistics.quantiles(timings, n=100)[94]
    print(f"{name:<12} context pass x{len(timings)}: median {median:.3f} ms, p95 {p95:.3f} ms")
    return median


async def main() -> int:
    print(f"context pass: {ITEMS_PER_PASS} queued items, session of {ROWS} rows, {ROUNDS} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = SQLiteStore(Path(tmp) / "bench.db")
        try:
            sqlite_median = report("SQLiteStore", await measure(sqlite))
        finally:
            await sqlite.close()
    memory = MemoryStore()
    try:
        report("MemoryStore", await measure(memory))
    finally:
        await memory.close()
    ok = sqlite_median < BUDGET_MS
    print(f"budget: SQLite median < {BUDGET_MS} ms: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
