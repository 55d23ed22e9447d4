"""PostgresStore shared by several processes: what the README promises replicas ("Several processes").

Each test starts real child processes (``tests/store/_pg_child.py``), each with its own
PostgresStore and pool on the test's schema, releases them together, then reads the outcome
back through a store of its own. Skipped, with the reason, where no PostgreSQL answers.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from helix_stream.store import PostgresStore
from tests._store import commit_context, create_session, pending_context
from tests.loopback import LoopbackServer, text, tool_calls
from tests.store import _pg

ROOT = Path(__file__).resolve().parents[2]


def notice(content: str) -> dict[str, Any]:
    return {"kind": "notice", "content": content}


class Child:
    """One ``_pg_child`` process; its output read line by line, with a timeout."""

    def __init__(self, role: str, args: dict[str, Any]) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.store._pg_child", role, json.dumps(args)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )

    async def line(self, timeout: float = 60) -> str:
        assert self.proc.stdout is not None
        read = asyncio.to_thread(self.proc.stdout.readline)
        return (await asyncio.wait_for(read, timeout)).strip()

    async def result(self) -> Any:
        line = await self.line()
        assert await asyncio.to_thread(self.proc.wait, 30) == 0
        return json.loads(line)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class Children:
    """Child processes released together: each prints READY, then waits for the go file."""

    def __init__(self, tmp_path: Path, schema: str) -> None:
        self.go = tmp_path / "go"
        self.base = {"dsn": _pg.DSN, "schema": schema, "go": str(self.go)}
        self.started: list[Child] = []

    def start(self, role: str, **args: Any) -> Child:
        child = Child(role, {**self.base, **args})
        self.started.append(child)
        return child

    async def release(self) -> None:
        for child in self.started:
            assert await child.line() == "READY"
        self.go.touch()

    def kill_all(self) -> None:
        for child in self.started:
            child.kill()


@pytest.fixture
async def shared(tmp_path: Path) -> AsyncIterator[tuple[PostgresStore, Children]]:
    """The test's own store, and the children it starts, on one fresh schema."""
    store = _pg.make_store()
    children = Children(tmp_path, store.schema)
    try:
        yield store, children
    finally:
        children.kill_all()
        await store.close()


async def test_context_added_by_another_process_reaches_the_runs_next_model_call(
    shared: tuple[PostgresStore, Children], tmp_path: Path, loopback: LoopbackServer
) -> None:
    store, children = shared
    flag = tmp_path / "flag"
    loopback.script(tool_calls(("wait_for_flag", {"name": "db"})), text("all done"))
    runner = children.start("run", sid="shared", api_base=loopback.api_base, flag=str(flag))
    await children.release()
    assert await runner.line() == "TOOL STARTED"  # A is mid-run, inside its tool
    record = await store.get_session("shared")
    assert record is not None and record.status == "running"

    adder = children.start("add_context", sid="shared", texts=["from B", "also from B"], key="b-1")
    assert await adder.line() == "READY"  # the go file exists already: it runs at once
    assert await adder.result() == [2, 0]  # recorded once; the retry with its key records nothing
    assert [e.items for e in await pending_context(store, "shared")] == [
        [notice("from B") | {"source": "app"}, notice("also from B") | {"source": "app"}]
    ]
    flag.touch()
    assert await runner.result() == {"text": "all done"}

    first, second = (body["messages"] for body in loopback.bodies())
    from_b = [
        '<context kind="notice" source="app">\nfrom B\n</context>',
        '<context kind="notice" source="app">\nalso from B\n</context>',
    ]
    assert not any(m.get("content") in from_b for m in first)
    assert second[-2:] == [{"role": "system", "content": row} for row in from_b]
    assert second[-3]["role"] == "tool"
    # The log, read back at the end: each item is exactly one row, in one gap-free sequence.
    log = await store.read_log("shared")
    assert [r.seq for r in log] == list(range(1, len(log) + 1))
    contents = Counter(r.payload["content"] for r in log if r.role == "context")
    assert contents == {"from B": 1, "also from B": 1}
    assert await pending_context(store, "shared") == []
    [entry] = await _pg.delivered_entries(store, "shared")
    assert entry.key == "b-1" and log[entry.delivered_seq - 1].payload["content"] == "from B"
    record = await store.get_session("shared")
    assert record is not None and record.status == "idle"


async def test_two_processes_enqueueing_with_the_same_keys_record_each_once(
    shared: tuple[PostgresStore, Children],
) -> None:
    store, children = shared
    await create_session(store, "keys", agent_name="agent")
    n = 200
    racers = [children.start("enqueue_keys", sid="keys", n=n, batch=8, pool=8) for _ in range(2)]
    await children.release()
    a, b = [await racer.result() for racer in racers]
    # Per key, exactly one of the two processes recorded the item; the other got 0.
    assert [sorted(pair) for pair in zip(a, b, strict=True)] == [[0, 1]] * n
    entries = await pending_context(store, "keys")
    assert sorted(e.key for e in entries if e.key) == sorted(f"k{i}" for i in range(n))
    assert all(e.items == [notice(f"request {str(e.key)[1:]}")] for e in entries)


async def test_two_runners_racing_for_one_session_exactly_one_runs(
    shared: tuple[PostgresStore, Children], tmp_path: Path, loopback: LoopbackServer
) -> None:
    store, children = shared
    # A slow reply keeps the winner's turn open well past the loser's attempt; a second reply
    # is scripted so that a second runner getting through would show up, not hang.
    loopback.script(text("winner", pieces=5, delay=0.6), text("second runner got in"))
    runners = [
        children.start("run", sid="race", api_base=loopback.api_base, flag=str(tmp_path / "f"))
        for _ in range(2)
    ]
    await children.release()
    outcomes = [await runner.result() for runner in runners]
    assert sorted(outcomes, key=str) == [{"busy": "state_session_busy"}, {"text": "winner"}]
    assert len(loopback.requests) == 1
    users = [r.payload["content"] for r in await store.read_log("race") if r.role == "user"]
    assert users == ["go"]


async def test_compare_and_set_across_processes_lets_exactly_one_win_each_time(
    shared: tuple[PostgresStore, Children],
) -> None:
    store, children = shared
    n = 300
    for i in range(n):
        await create_session(store, f"cas-{i}", agent_name="agent")
    racers = [children.start("cas", n=n) for _ in range(3)]
    await children.release()
    results = [await racer.result() for racer in racers]
    assert [sum(won) for won in zip(*results, strict=True)] == [1] * n
    records = [await store.get_session(f"cas-{i}") for i in range(n)]
    assert [r.status if r else None for r in records] == ["running"] * n


async def test_context_passes_racing_enqueues_from_other_processes_lose_and_double_nothing(
    shared: tuple[PostgresStore, Children], tmp_path: Path
) -> None:
    store, children = shared
    await create_session(store, "busy", agent_name="agent")
    stop = tmp_path / "stop"
    committers = [children.start("commit_loop", sid="busy", stop=str(stop)) for _ in range(2)]
    producers = [children.start("produce", sid="busy", n=150, name=f"p{k}") for k in range(2)]
    await children.release()
    assert [await p.result() for p in producers] == [150, 150]
    stop.touch()
    loops = [await c.result() for c in committers]
    assert all(loop["passes"] > 0 for loop in loops)
    final = await commit_context(store, "busy")  # whatever the loops left queued

    log = await store.read_log("busy")
    assert [r.seq for r in log] == list(range(1, len(log) + 1))  # gap-free, never doubled
    rows = [r.payload for r in log if r.role == "context"]
    expected = [f"p{k}-{i}-{j}" for k in range(2) for i in range(150) for j in range(1 + i % 3)]
    assert sorted(row["content"] for row in rows) == sorted(expected)  # each item exactly once
    assert sum(loop["rows"] for loop in loops) + len(final) == len(rows)
    # Each entry's rows are contiguous, from its delivered_seq on, in item order.
    entries = await _pg.delivered_entries(store, "busy")
    assert len(entries) == 300 and await pending_context(store, "busy") == []
    for entry in entries:
        assert entry.delivered_seq is not None
        span = log[entry.delivered_seq - 1 : entry.delivered_seq - 1 + len(entry.items)]
        assert [r.payload["content"] for r in span] == [i["content"] for i in entry.items]
        assert {r.payload["origin"]["queue_id"] for r in span} == {entry.id}
