"""A context pass with 10 queued items on a session of 1,000 rows (budget: median < 2 ms, SQLite).

Run: ``.venv/bin/python bench/bench_context_pass.py`` (or ``make bench``).

It times what a turn does before each model call — the context pass's hook and memory (none
here), the one ``write_turn`` transaction that commits the queue as rows, folding and
rendering the new rows, and their chunks — not just the store call. The queue is refilled
(untimed) before each pass.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (puts the repo on sys.path)

import helix_stream as hs
from helix_stream.chunks import ContextRowChunk
from helix_stream.context import ContextPass, ContextRow
from helix_stream.store import NewSession, TurnWrite

ROWS = 1_000
PASSES = 200


async def measure(store: hs.Store) -> list[float]:
    sid = "bench"
    await store.write_turn(sid, TurnWrite(create=NewSession(agent_name="bench")))
    for i in range(ROWS // 2):
        await store.enqueue_context(
            sid,
            [{"kind": "notice", "content": f"row {i}", "source": "app"}],
            source="app",
            origin={"type": "app"},
        )
        message = {"role": "user", "content": f"message {i}"}
        await store.write_turn(sid, TurnWrite(messages=[message], deliver_queue=True))
    # A turn reads and renders the log once, at its start.
    context_pass = ContextPass(sid, (await store.read_snapshot(sid)).log)
    messages = list(context_pass.messages)
    times = []
    for n in range(PASSES):
        for i in range(10):
            await store.enqueue_context(
                sid,
                [hs.notice(f"queued {n}.{i}") | {"source": "app"}],
                source="app",
                origin={"type": "app"},
            )
        start = time.perf_counter()
        gathered = await context_pass.gather(n)
        write = TurnWrite(deliver_queue=True, rows=gathered.rows)
        records = (await store.write_turn(sid, write)).records
        messages.extend(context_pass.take(records))
        chunks = [ContextRowChunk(row=ContextRow.from_record(r)) for r in records]
        times.append(time.perf_counter() - start)
        assert len(chunks) == 10 and len(messages) == ROWS + 10 * (n + 1)
    await store.close()
    return times


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = await measure(hs.SQLiteStore(str(Path(tmp) / "bench.db")))
    memory = await measure(hs.MemoryStore())
    print(f"context pass, 10 queued items, session of {ROWS} rows, {PASSES} passes:")
    for name, times in (("SQLiteStore", sqlite), ("MemoryStore", memory)):
        q = statistics.quantiles(times, n=20)
        print(
            f"  {name:12s} median {statistics.median(times) * 1000:6.3f} ms   p95 {q[18] * 1000:6.3f} ms"
        )
    ok = statistics.median(sqlite) < 0.002
    print(f"budget (SQLite median < 2 ms): {'OK' if ok else 'OVER BUDGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
