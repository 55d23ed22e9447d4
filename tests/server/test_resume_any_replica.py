"""Resume on any replica: two server processes on one PostgreSQL; a turn runs on A, a client
that reconnects to B gets the whole stream, so far and then live."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server._asgi import sse_data
from tests.store import _pg

ROOT = Path(__file__).resolve().parents[2]
SERVER = textwrap.dedent(
    """
    import sys, uvicorn
    import helix_stream as hs
    from helix_stream.server import create_app

    store = hs.PostgresStore(sys.argv[2], schema=sys.argv[3])
    agent = hs.Agent(name="slow", model="helix/demo-slow")
    app = create_app(hs.Executor(store=store), agent)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    """
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def replicas() -> Iterator[list[str]]:
    schema = _pg.new_schema()  # skips, with the reason, when no PostgreSQL answers
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(ROOT)}
    ports = [_free_port(), _free_port()]
    servers = [
        subprocess.Popen(
            [sys.executable, "-c", SERVER, str(port), _pg.DSN, schema],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in ports
    ]
    try:
        yield [f"http://127.0.0.1:{port}" for port in ports]
    finally:
        for server in servers:
            server.terminate()
            server.communicate(timeout=30)
        _pg.drop_schemas()


async def _ready(client: httpx.AsyncClient, url: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if (await client.get(f"{url}/api/chat/none/messages")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, f"{url} did not start"
        await asyncio.sleep(0.2)


async def test_a_turn_running_on_one_process_is_resumed_whole_on_another(
    replicas: list[str],
) -> None:
    a, b = replicas
    words = " ".join(f"word{i}" for i in range(60))  # the demo model echoes them, slowly
    body = {
        "id": "replicated",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": words}]}],
    }
    async with httpx.AsyncClient(timeout=60) as client:
        await asyncio.gather(_ready(client, a), _ready(client, b))
        async with client.stream("POST", f"{a}/api/chat", json=body) as first:
            assert first.status_code == 200
            seen = b""
            pieces = first.aiter_bytes()
            async for piece in pieces:
                seen += piece
                if seen.count(b'"text-delta"') >= 3:
                    break
            # Mid-answer, on the other process:
            resumed = await client.get(f"{b}/api/chat/replicated/stream")
            rest = b"".join([piece async for piece in pieces])
        original = sse_data(seen + rest)
    assert resumed.status_code == 200
    got = sse_data(resumed.content)
    assert original[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    assert got == original  # every event, from `start`, then live to the end
    async with httpx.AsyncClient(timeout=60) as client:
        late = await client.get(f"{b}/api/chat/replicated/stream")
    assert late.status_code == 204  # the turn is over
