"""A turn's lease, through the executor, on every store (README, "Reliability notes").

A session whose turn lost its process (here: a claim written with a lease nobody renews) is
refused while the lease runs and taken over by the next run once it expired, with the dead
turn's unanswered user message closed by an empty interrupted answer; a live turn whose tool
runs longer than the lease keeps its session (the heartbeat is not progress); two racing
takeovers let exactly one run; a turn that failed before any text stores an empty interrupted
answer, so the log never holds two user messages in a row (item 7 of issue 25).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.errors import SessionLeaseLostError
from helix_stream.server import create_app
from helix_stream.store import Lease, NewSession, TurnWrite
from tests.executor._util import snapshot
from tests.loopback import LoopbackServer, error, text, tool_calls
from tests.store import _pg
from tests.store._wrapper import MeteredStore

SID = "leased"
LEASE = 0.4
RENEW = 0.1


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Stores with a short lease, so that a dead turn's session frees itself quickly."""
    options = {"lease_seconds": LEASE, "lease_renew_seconds": RENEW}
    s: hs.Store
    if request.param == "memory":
        s = hs.MemoryStore(**options)
    elif request.param == "sqlite":
        s = hs.SQLiteStore(str(tmp_path / "lease.db"), **options)
    else:
        s = _pg.make_store(**options)
    try:
        yield s
    finally:
        await s.close()
        _pg.drop_schemas()


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="leased",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
        **kw,
    )


async def dead_turn(store: hs.Store, seconds: float = LEASE) -> Lease:
    """What a process that died mid-turn leaves: the session running under a lease nobody
    renews, with the user message it never answered."""
    held = Lease(token=uuid.uuid4().hex, seconds=seconds)
    write = TurnWrite(
        create=NewSession(agent_name="leased"),
        expect=("idle",),
        status="running",
        lease=held,
        messages=[{"role": "user", "content": "first"}],
    )
    assert (await store.write_turn(SID, write)).applied
    return held


def roles(log: list[hs.LogRecord]) -> list[tuple[str, Any]]:
    return [(r.role, r.payload.get("content")) for r in log if r.role != "context"]


async def test_a_dead_turns_session_is_busy_until_its_lease_expires_then_taken_over(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=store)
    old = await dead_turn(store)
    before = await snapshot(store, SID)
    with pytest.raises(hs.SessionBusyError):
        await executor.run(agent(loopback), SID, "too soon").text()
    assert await snapshot(store, SID) == before  # the refusal wrote nothing
    await asyncio.sleep(LEASE + 0.1)
    loopback.script(text("the answer"))
    assert await executor.run(agent(loopback), SID, "second").text() == "the answer"
    log = await store.read_log(SID)
    assert roles(log) == [
        ("user", "first"),
        ("assistant", ""),  # the dead turn's answer, closed as interrupted
        ("user", "second"),
        ("assistant", "the answer"),
    ]
    record = await store.get_session(SID)
    assert record is not None and record.status == "idle" and record.lease_token is None
    # The old owner's late heartbeat cannot take the session back.
    with pytest.raises(SessionLeaseLostError):
        await store.write_turn(SID, TurnWrite(lease=old))
    ui = await executor.ui_messages(SID)
    assert [m["role"] for m in ui] == ["user", "assistant", "user", "assistant"]
    assert ui[1]["metadata"] == {"interrupted": True}


async def test_a_continue_takes_over_and_answers_the_dead_turns_message(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=store)
    await dead_turn(store)
    await asyncio.sleep(LEASE + 0.1)
    loopback.script(text("late answer"))
    assert await executor.run(agent(loopback), SID).text() == "late answer"
    assert roles(await store.read_log(SID)) == [("user", "first"), ("assistant", "late answer")]


async def test_two_racing_takeovers_run_exactly_one_turn(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    await dead_turn(store)
    await asyncio.sleep(LEASE + 0.1)
    loopback.script(text("one"), text("two"))
    executors = [hs.Executor(store=store), hs.Executor(store=store)]
    results = await asyncio.gather(
        *(e.run(agent(loopback), SID, f"racer {i}").text() for i, e in enumerate(executors)),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["SessionBusyError", "str"]
    assert len(loopback.requests) == 1
    users = [content for role, content in roles(await store.read_log(SID)) if role == "user"]
    assert len(users) == 2 and users[0] == "first"


class Wait(BaseModel):
    seconds: float


async def test_a_tool_slower_than_the_lease_keeps_its_session(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=store)
    started = asyncio.Event()

    async def slow(args: Wait, ctx: hs.ToolContext) -> str:
        started.set()
        await asyncio.sleep(args.seconds)
        return "done"

    tool = hs.tool(name="slow", input_schema=Wait, execute=slow)
    loopback.script(tool_calls(("slow", {"seconds": LEASE * 4})), text("finished"))
    run = asyncio.create_task(executor.run(agent(loopback, tools=[tool]), SID, "go").text())
    await asyncio.wait_for(started.wait(), 10)
    await asyncio.sleep(LEASE * 2)  # two leases long: only the heartbeat holds it
    record = await store.get_session(SID)
    assert record is not None and record.status == "running"
    assert not record.lease_expired(time.time())
    with pytest.raises(hs.SessionBusyError):
        await hs.Executor(store=store).run(agent(loopback), SID, "intruder").text()
    assert await asyncio.wait_for(run, 20) == "finished"
    record = await store.get_session(SID)
    assert record is not None and record.status == "idle"


async def test_a_turn_that_failed_before_any_text_stores_an_empty_interrupted_answer(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor = hs.Executor(store=store)
    loopback.script(error(500, "provider down"))
    live: list[c.Chunk] = []
    async for chunk in executor.run(agent(loopback), SID, "hello"):
        live.append(chunk)
    assert any(isinstance(ch, c.ErrorChunk) for ch in live)
    start = next(ch for ch in live if isinstance(ch, c.Start))
    assert (await executor.session(SID)).status == "failed"
    log = await store.read_log(SID)
    assert roles(log) == [("user", "hello"), ("assistant", "")]
    ui = await executor.ui_messages(SID)
    assert [m["role"] for m in ui] == ["user", "assistant"]
    # The stored answer is the live stream's message: same id, marked interrupted, no text.
    assert ui[1]["id"] == start.message_id
    assert ui[1]["metadata"] == {"interrupted": True, "error": "model_unavailable"}
    assert not [p for p in ui[1]["parts"] if p["type"] == "text"]
    loopback.script(text("back"))
    assert await executor.run(agent(loopback), SID, "again").text() == "back"
    assert [r for r, _ in roles(await store.read_log(SID))] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_a_dead_turns_session_is_not_running_for_stop_or_close_sandbox(
    store: hs.Store, loopback: LoopbackServer, tmp_path: Path
) -> None:
    executor = hs.Executor(store=store)
    a = agent(loopback, sandbox=hs.LocalSandbox(tmp_path / "sb"))
    app = create_app(executor, a)
    transport = httpx.ASGITransport(app=app)
    await dead_turn(store)
    with pytest.raises(hs.SessionBusyError):  # held by a lease that runs
        await executor.close_sandbox(SID, a)
    before = await snapshot(store, SID)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
        # Asked through the store, the turn never answers: its process is gone, so the stop
        # ends when the lease does, with nothing stopped.
        started = time.monotonic()
        done = await client.post(f"/api/chat/{SID}/stop")
        assert (done.status_code, done.json()) == (200, {"stopped": False})
        assert time.monotonic() - started < LEASE + 1.0
        again = await client.post(f"/api/chat/{SID}/stop")  # expired: at once, nothing to stop
        assert (again.status_code, again.json()) == (200, {"stopped": False})
    after = await snapshot(store, SID)
    assert after[:2] == before[:2]  # status and log as they were (a stop request is meta)
    await executor.close_sandbox(SID, a)  # not refused as busy: nothing was recorded


class Q(BaseModel):
    q: str


class _Writes(MeteredStore):
    """Records the lease every ``write_turn`` carries."""

    def __init__(self, inner: hs.Store) -> None:
        super().__init__(inner)
        self.leases: list[str | None] = []

    async def write_turn(self, session_id: str, write: TurnWrite) -> hs.TurnWriteResult:
        self.leases.append(None if write.lease is None else write.lease.token)
        return await super().write_turn(session_id, write)


async def test_the_fence_is_a_writer_of_write_turn_and_every_write_of_a_turn_carries_it(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    """The lease fence is a small writer (one method, ``write_turn``), not a proxy of the store:
    the turn reads through the store itself, and each of its writes (the claim, a step with a
    tool call, the last step) carries one lease; a new turn carries another."""
    from helix_stream.session._lease import FencedWriter

    assert [n for n in vars(FencedWriter) if not n.startswith("_")] == ["write_turn"]
    writes = _Writes(store)
    executor = hs.Executor(writes)

    def lookup(input: Q) -> str:
        return input.q

    tools = [hs.tool(name="lookup", input_schema=Q, execute=lookup)]
    loopback.script(tool_calls(("lookup", {"q": "x"})), text("found"), text("again"))
    await executor.run(agent(loopback, tools=tools), SID, "look").consume()
    first = writes.leases
    assert len(first) >= 2 and None not in first and len(set(first)) == 1
    assert writes.calls["read_snapshot"] == 1
    writes.leases = []
    await executor.run(agent(loopback, tools=tools), SID, "more").consume()
    assert len(set(writes.leases)) == 1 and set(writes.leases) != set(first)
    assert (await store.get_session(SID)).status == "idle"  # type: ignore[union-attr]


@contextlib.contextmanager
def clock_off_by(seconds: float) -> Iterator[None]:
    """This process's clock (``time.time``, which every module reads) ``seconds`` off, as on a
    replica whose clock drifted; the event loop's monotonic clock is left alone."""
    real = time.time
    time.time = lambda: real() + seconds  # type: ignore[assignment]
    try:
        yield
    finally:
        time.time = real  # type: ignore[assignment]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_replica_whose_clock_is_30_s_off_takes_over_neither_early_nor_late_on_postgres(
    backend: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    """On PostgreSQL the database's clock decides a lease (``now()`` in the statement that reads
    or writes it), so a replica 30 s ahead does not take a live turn's session over, and one
    30 s behind takes a dead turn's over as soon as its lease ended. SQLite keeps the process's
    clock (one machine, one clock): there the same skew moves the takeover, which shows that
    the skew reaches everything the replica decides with."""
    schema = _pg.new_schema() if backend == "postgres" else ""
    options = {"lease_seconds": LEASE, "lease_renew_seconds": RENEW}

    def replica() -> hs.Store:
        if backend == "postgres":
            return _pg.make_store(schema, **options)
        return hs.SQLiteStore(str(tmp_path / "replicas.db"), **options)

    healthy, skewed = replica(), replica()
    try:
        early, late = [], []
        for sid in ("live", "dead"):
            # What a turn of the healthy replica writes: its claim, with a lease that runs for
            # 5 s ("live") or ended a moment ago ("dead").
            seconds = 5.0 if sid == "live" else LEASE
            held = Lease(token=uuid.uuid4().hex, seconds=seconds)
            write = TurnWrite(
                create=NewSession(agent_name="leased"), expect=("idle",), status="running",
                lease=held, messages=[{"role": "user", "content": "first"}],
            )  # fmt: skip
            assert (await healthy.write_turn(sid, write)).applied
        await asyncio.sleep(LEASE + 0.2)
        loopback.script(text("taken over"), text("taken over"))
        executor = hs.Executor(skewed)
        with clock_off_by(+30):
            try:
                early.append(await executor.run(agent(loopback), "live", "second").text())
            except hs.SessionBusyError:
                early.append("busy")
        with clock_off_by(-30):
            try:
                late.append(await executor.run(agent(loopback), "dead", "second").text())
            except hs.SessionBusyError:
                late.append("busy")
        if backend == "postgres":
            assert (early, late) == (["busy"], ["taken over"])
            live = await healthy.get_session("live")
            assert live is not None and live.status == "running" and not live.lease_expired()
        else:
            assert (early, late) == (["taken over"], ["busy"])
    finally:
        await healthy.close()
        await skewed.close()
