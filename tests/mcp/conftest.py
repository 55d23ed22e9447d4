"""MCP servers for the tests: ``server_app.py`` as a subprocess over stdio, or over HTTP on
127.0.0.1 (a free port the server picks and prints). Each test gets its own state folder."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

APP = Path(__file__).with_name("server_app.py")
NO_SDK = (
    "the MCP tests need the mcp package: pip install 'helix-stream[mcp]' (make test installs it)"
)


@dataclass
class State:
    """The state folder a test server reports into (see server_app.py)."""

    path: Path

    def lines(self, name: str) -> list[str]:
        file = self.path / name
        return file.read_text().splitlines() if file.exists() else []

    def hide(self, *tools: str) -> None:
        (self.path / "hidden").write_text("\n".join(tools) + "\n")


@pytest.fixture
def state(tmp_path: Path) -> State:
    return State(tmp_path)


def stdio_args() -> list[str]:
    return [str(APP), "stdio"]


@pytest.fixture
def stdio_env(state: State) -> dict[str, str]:
    """The env= a stdio test server needs."""
    return {"HELIX_MCP_STATE": str(state.path)}


@dataclass
class HttpServer:
    base: str
    process: subprocess.Popen[str]

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def sse_url(self) -> str:
        return f"{self.base}/sse"


def start_http(state: State, tokens: str = "") -> HttpServer:
    env = {**os.environ, "HELIX_MCP_STATE": str(state.path), "HELIX_MCP_TOKENS": tokens}
    process = subprocess.Popen(
        [sys.executable, str(APP), "http"], stdout=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 30)
    if not ready:
        process.kill()
        raise AssertionError("the HTTP test server did not print its port within 30 s")
    port = int(process.stdout.readline())
    return HttpServer(base=f"http://127.0.0.1:{port}", process=process)


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


@pytest.fixture
def http_server(state: State) -> Iterator[HttpServer]:
    server = start_http(state)
    yield server
    stop(server.process)


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` until it holds (a short timeout of its own: no test hangs)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"still not true after {timeout} s")
        await asyncio.sleep(0.05)


def tools_bytes(raw: bytes) -> bytes:
    """The ``"tools":[...]`` part of a raw OpenAI request body, byte for byte as sent."""
    text = raw.decode()
    start = text.index('"tools":') + len('"tools":')
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end].encode()


@pytest.fixture
async def stdio_server(stdio_env: dict[str, str]) -> AsyncIterator[Any]:
    """The test server over stdio, named ``demo``; closed after the test."""
    import helix_stream as hs

    server = hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo")
    async with server:
        yield server
