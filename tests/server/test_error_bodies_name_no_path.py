"""No HTTP error body names a server path (issue 36 part 6): the chat app over real HTTP, with
faults whose first cause carries an absolute path — a full SQLite disk (the database file) and
an MCP stdio server that cannot start (its program's path). The operator's log keeps the path.
"""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest

import helix_stream as hs
from helix_stream.server import create_app
from tests._store import create_session
from tests.executor._util import snapshot
from tests.server._live import serving
from tests.server.conftest import chat, user
from tests.store.test_sqlite_disk_full import fill


async def test_the_503_of_a_full_disk_names_no_path_and_the_log_does(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = hs.SQLiteStore(tmp_path / "secret-place" / "chat.db")
    (tmp_path / "secret-place").mkdir(exist_ok=True)
    executor = hs.Executor(store=store)
    try:
        await create_session(store, "full", agent_name="demo")
        fill(store, True)
        before = await snapshot(store, "full")
        app = create_app(executor, hs.Agent(name="demo", model="helix/demo"))
        async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
            with caplog.at_level(logging.WARNING, logger="helix_stream.store"):
                response = await client.post("/api/chat", json=chat("full", user("x" * 200_000)))
        assert response.status_code == 503
        assert response.json()["error"]["code"] == "store_unavailable"
        assert "disk is full" in response.text
        assert str(tmp_path) not in response.text and "secret-place" not in response.text
        assert str(tmp_path) in caplog.text  # the operator still learns which file
        assert await snapshot(store, "full") == before
    finally:
        await store.close()


async def test_an_mcp_server_that_cannot_start_is_a_503_without_its_path(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="needs the mcp extra")
    program = tmp_path / "secret-place" / "weather-server"
    server = hs.MCPServer.stdio(str(program), ["--port", "1"], name="weather")
    agent = hs.Agent(name="demo", model="helix/demo", tools=[server])
    store = hs.MemoryStore()
    app = create_app(hs.Executor(store=store), agent)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post("/api/chat", json=chat("s", user("hi")))
    assert response.status_code == 503, response.text
    body = response.json()["error"]
    assert body["code"] == "tool_provider_unavailable"
    assert "'weather-server'" in body["message"]  # the program's name says which server
    assert str(tmp_path) not in response.text and "secret-place" not in response.text
    assert await store.get_session("s") is None  # refused: nothing written
