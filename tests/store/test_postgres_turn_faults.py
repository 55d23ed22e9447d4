"""A turn whose PostgreSQL connections die in the middle, through the public API.

A tool of the turn ends the store's backends (``pg_terminate_backend``, filtered by the store's
own ``application_name``) between the model's tool call and the step's commit. The session must
not stay ``running``: the turn ends, the rows committed before stay as they are, and the next
``executor.run`` — or ``POST /api/chat`` — works. Skipped, with the reason, where no PostgreSQL
answers.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg
import pytest

import helix_stream as hs
from helix_stream.errors import StoreUnavailableError
from helix_stream.server import create_app
from helix_stream.store import PostgresStore
from tests.store import _pg
from tests.store._pg import fill_pool, terminate
from tests.store._pg_proxy import PgProxy

SID = "faults/turn-1"  # a sub-agent style id: "/" must round-trip too


@pytest.fixture
async def store() -> AsyncIterator[PostgresStore]:
    made = _pg.make_store(min_size=4, max_size=4)
    yield made
    await made.close()


def severing_agent(store: PostgresStore, ended: list[int]) -> hs.Agent:
    @hs.tool
    async def sever_connections() -> str:
        """End every connection of the session store."""
        ended.append(await terminate(store.application_name))
        return "severed"

    return hs.Agent(name="faults", model="helix/demo", tools=[sever_connections])


def roles(log: list[Any]) -> list[str]:
    return [r.role for r in log]


async def test_a_turn_whose_connections_are_ended_by_its_tool_ends_idle_and_the_next_run_works(
    store: PostgresStore,
) -> None:
    ended: list[int] = []
    agent = severing_agent(store, ended)
    executor = hs.Executor(store=store)
    await fill_pool(store, 4)
    chunks = [c async for c in executor.run(agent, SID, "Please sever the connections.")]
    assert ended and ended[0] >= 1  # the tool did end the pool's connections mid-turn
    assert [c.type for c in chunks if c.type == "error"] == []
    session = await executor.session(SID)
    assert session.status == "idle"
    log = await executor.log(SID)
    # The user message (committed before the tool ran) once, then the step and the answer.
    assert roles(log) == ["user", "assistant", "tool", "assistant"]
    assert log[0].payload["content"] == "Please sever the connections."
    assert log[2].payload["content"] == "severed"
    assert "Done: sever_connections returned severed" in log[3].payload["content"]
    # The next run works.
    text = await executor.run(agent, SID, "Hello again").text()
    assert text.startswith("You said: Hello again")
    assert (await executor.session(SID)).status == "idle"
    assert roles(await executor.log(SID))[4:] == ["user", "assistant"]


def _sse(raw: bytes) -> list[Any]:
    out: list[Any] = []
    for line in raw.decode().splitlines():
        if line.startswith("data: "):
            data = line[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def _chat(text: str, message_id: str) -> dict[str, Any]:
    return {
        "id": SID,
        "messages": [{"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
    }


async def test_over_http_the_chat_after_a_severed_turn_works(store: PostgresStore) -> None:
    ended: list[int] = []
    agent = severing_agent(store, ended)
    executor = hs.Executor(store=store)
    app = create_app(executor, agent)
    await fill_pool(store, 4)
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        first = await client.post("/api/chat", json=_chat("Please sever the connections.", "u1"))
        assert first.status_code == 200
        chunks = _sse(first.content)
        assert ended and [c for c in chunks if isinstance(c, dict) and c["type"] == "error"] == []
        second = await client.post("/api/chat", json=_chat("Hello again", "u2"))
        assert second.status_code == 200, second.text
        texts = [
            c["delta"]
            for c in _sse(second.content)
            if isinstance(c, dict) and c["type"] == "text-delta"
        ]
        assert "".join(texts).startswith("You said: Hello again")
        # Every committed row is there once, and the "/" id reads back on the GET routes.
        messages = await client.get(f"/api/chat/{SID}/messages")
        assert messages.status_code == 200, messages.text
        assert [m["role"] for m in messages.json()] == ["user", "assistant", "user", "assistant"]
        assert (await client.get(f"/api/chat/{SID}/stream")).status_code == 204
    assert (await executor.session(SID)).status == "idle"


async def test_a_turn_that_fails_because_the_store_stays_away_does_not_stay_running() -> None:
    _pg.require()
    info = psycopg.conninfo.conninfo_to_dict(_pg.DSN)
    async with PgProxy(str(info.get("host", "127.0.0.1")), int(info.get("port", 5432))) as proxy:
        dsn = proxy.dsn(str(info.get("user", "postgres")), str(info.get("dbname", "test")))
        store = PostgresStore(dsn, schema=_pg.new_schema(), timeout=1.0)
        try:

            async def back_later() -> None:
                await asyncio.sleep(2.5)
                proxy.refuse = False

            @hs.tool
            async def sever_connections() -> str:
                """Take the store away for a while."""
                proxy.refuse = True
                proxy.cut_all()
                restore.append(asyncio.create_task(back_later()))
                return "severed"

            restore: list[asyncio.Task[None]] = []
            agent = hs.Agent(name="faults", model="helix/demo", tools=[sever_connections])
            executor = hs.Executor(store=store)
            chunks = [c async for c in executor.run(agent, SID, "Please sever the connections.")]
            errors = [c for c in chunks if c.type == "error"]
            assert errors and isinstance(errors[0].error, StoreUnavailableError)
            await asyncio.gather(*restore)
            session = await executor.session(SID)
            assert session.status in ("idle", "failed")
            await executor.retry(SID)
            assert (await executor.run(agent, SID, "Hello again").text()).startswith("You said")
        finally:
            await store.close()
