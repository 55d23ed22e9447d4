"""SQLite on a full disk (issue 25 item 6): a typed, retryable ``StoreUnavailableError`` that
says the disk is full, nothing written, the file intact; a turn whose disk fills mid-turn sets
its final status once there is room again, instead of leaving the session ``running``.

The full disk is injected at the SQLite layer: ``PRAGMA max_page_count`` at the file's
current size makes every write that needs a new page fail with SQLITE_FULL, exactly as a full
file system does.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.session import _finish
from helix_stream.store import SQLiteStore, TurnWrite
from tests._store import create_session
from tests.executor._util import snapshot
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server.conftest import chat, user

SID = "full"
BIG = {"role": "user", "content": "x" * 200_000}  # many pages: never fits a full file


def fill(store: SQLiteStore, full: bool) -> None:
    """Make the store's file full (no page more), or give it room again."""
    for conn in (store._loop_conn, store._thread_conn):
        assert conn is not None
        if full:
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            conn.execute(f"PRAGMA max_page_count = {pages}")
        else:
            conn.execute("PRAGMA max_page_count = 1073741823")


def integrity(path: Path) -> str:
    with closing(sqlite3.connect(path)) as conn:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])


async def test_a_full_disk_is_a_retryable_store_unavailable_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "full.db"
    store = SQLiteStore(path)
    try:
        await create_session(store, SID)
        fill(store, True)
        before = await snapshot(store, SID)
        with pytest.raises(hs.StoreUnavailableError, match="disk is full") as raised:
            await store.write_turn(SID, TurnWrite(messages=[BIG]))
        error = raised.value
        assert (error.code, error.http_status, error.retryable) == ("store_unavailable", 503, True)
        assert await snapshot(store, SID) == before
        fill(store, False)  # room again: the same write goes through
        assert (await store.write_turn(SID, TurnWrite(messages=[BIG]))).records
    finally:
        await store.close()
    assert integrity(path) == "ok"


async def test_the_chat_route_answers_503_store_unavailable_on_a_full_disk(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "route.db")
    executor = hs.Executor(store=store)
    try:
        await create_session(store, SID, agent_name="demo")
        fill(store, True)
        before = await snapshot(store, SID)
        app = create_app(executor, hs.Agent(name="demo", model="helix/demo"))
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            response = await client.post("/api/chat", json=chat(SID, user("x" * 200_000)))
        body = response.json()
        assert response.status_code == 503, body
        assert body["error"]["code"] == "store_unavailable"
        assert "disk is full" in body["error"]["message"]
        assert await snapshot(store, SID) == before
    finally:
        await store.close()


async def test_a_disk_that_fills_mid_turn_gets_the_final_status_once_there_is_room(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    store = SQLiteStore(tmp_path / "turn.db")
    executor = hs.Executor(store=store)

    @hs.tool
    async def big_answer() -> str:
        """Fill the disk, then answer more than fits."""
        fill(store, True)
        return "y" * 200_000

    agent = hs.Agent(
        name="filler",
        model="openai/loopback",
        tools=[big_answer],
        max_retries=0,
        settings={"api_base": loopback.api_base, "api_key": "k"},
    )
    loopback.script(tool_calls(("big_answer", {})), text("never"))
    try:
        run = asyncio.create_task(executor.run(agent, SID, "go").text())

        async def room_later() -> None:
            # The step's write failed on the full disk; the turn retries its final status.
            while (await store.get_session(SID)) is None or not _full(store):
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)
            fill(store, False)

        freeing = asyncio.create_task(room_later())
        with pytest.raises(hs.StoreUnavailableError, match="disk is full"):
            await asyncio.wait_for(run, 30)
        await asyncio.wait_for(freeing, 5)
        record = await store.get_session(SID)
        assert record is not None
        assert record.status == "failed" and record.lease_token is None
        # A store away for longer (a 75 s outage) still gets the final status.
        assert sum(_finish._RETRY_DELAYS) >= 90
    finally:
        await store.close()


def _full(store: SQLiteStore) -> Any:
    conn = store._loop_conn
    assert conn is not None
    return conn.execute("PRAGMA max_page_count").fetchone()[0] < 1073741823
