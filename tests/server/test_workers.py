"""``helix-stream serve --workers N``: N processes on one port, one shared store.

The server runs as the user starts it (``python -m helix_stream serve``), in processes of its
own, with the embedded demo model.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "helix_stream", "serve", *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    store = str(tmp_path / "shared.db")
    # The demo model's paced form: a turn takes about a second, so that chats sent at once
    # overlap even on a loaded machine (with the instant one, a turn could end before another
    # POST of the race arrived, which then rightly ran a second turn).
    model = "helix/demo-slow"
    server = _serve("--port", str(port), "--store", store, "--workers", "2", "--model", model)
    try:
        yield f"http://127.0.0.1:{port}", server
    finally:
        server.terminate()
        server.communicate(timeout=30)  # waits, and closes the pipes


def _body(session_id: str, text: str) -> dict[str, object]:
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    return {"id": session_id, "trigger": "submit-message", "messages": [message]}


async def _chat(client: httpx.AsyncClient, url: str, session_id: str) -> tuple[int, list[str]]:
    response = await client.post(f"{url}/api/chat", json=_body(session_id, "Hello there"))
    types = [
        json.loads(line[6:])["type"]
        for line in response.text.split("\n")
        if line.startswith("data: {")
    ]
    return response.status_code, types


async def _wait_ready(url: str, server: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    async with httpx.AsyncClient(timeout=30) as client:
        # Every worker imports litellm at its startup; ask until chats answer.
        while True:
            assert server.poll() is None, server.communicate()[1][-3000:]
            try:
                if (await client.get(f"{url}/api/demo")).status_code == 200:
                    status, types = await _chat(client, url, f"warm-{time.monotonic()}")
                    if status == 200 and "finish" in types:
                        return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the workers did not start"
            await asyncio.sleep(0.2)


async def test_two_workers_serve_chats_and_a_session_runs_in_one_at_a_time(
    two_workers: tuple[str, subprocess.Popen[str]],
) -> None:
    url, server = two_workers
    await _wait_ready(url, server)
    # Fresh connections each (no pooling), so both workers take some of them.
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        served = await asyncio.gather(*[_chat(client, url, f"s{i}") for i in range(6)])
        assert [(status, types[-1]) for status, types in served] == [(200, "finish")] * 6
        assert all("text-delta" in types for _, types in served)
        # Four POSTs of one message to one new session at once: exactly one turn runs; the
        # others steer it (202: its message, taken once) or are refused (409 before the stream
        # starts, or an error chunk if they lost the race inside it).
        race = await asyncio.gather(*[_chat(client, url, "one") for _ in range(4)])
        ran = [t for status, t in race if status == 200 and "text-delta" in t]
        refused = [t for status, t in race if status in (202, 409) or "error" in t]
        assert (len(ran), len(refused)) == (1, 3), race
        messages = (await client.get(f"{url}/api/chat/one/messages")).json()
        assert [m["role"] for m in messages] == ["user", "assistant"]


def test_several_workers_refuse_a_store_they_cannot_share() -> None:
    server = _serve("--workers", "2", "--store", ":memory:", "--port", str(_free_port()))
    _, err = server.communicate(timeout=60)
    assert server.returncode == 2
    assert "not :memory:" in err
