"""The chat app over real HTTP: uvicorn serving an app on a loopback socket, in the test's own
event loop (so a MemoryStore or a SQLiteStore of the test is safe to read beside it), or in a
process of its own (:func:`server_process`)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` (lifespan on) until the block ends; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        deadline = asyncio.get_running_loop().time() + 60
        while not server.started:
            assert not task.done(), task.exception()
            assert asyncio.get_running_loop().time() < deadline, "uvicorn did not start"
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)
        sock.close()


@contextmanager
def server_process(script: str, *args: str, env: Mapping[str, str] = {}) -> Iterator[str]:
    """Run ``python -c script <port> *args`` (a uvicorn app serving on ``port``, the first
    argument) with the test's environment plus ``env``, until it answers; yields its base URL
    and kills it at the end."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    full_env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": str(root),
        **env,
    }
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(port), *args],
        env=full_env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, process.communicate()[1][-3000:]
            try:
                httpx.get(f"{url}/api/chat/x/messages", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        yield url
    finally:
        process.kill()
        process.communicate(timeout=30)
