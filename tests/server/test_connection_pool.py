"""litellm's connection pool is sized for the server (README, "Serving an agent to `useChat`"):
``routes(max_connections=...)`` reaches the client litellm streams through, and the default
does not queue behind litellm's 500 per host."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.models import _pool
from helix_stream.models._litellm import litellm_module
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, text
from tests.server._asgi import sse_data
from tests.server.conftest import chat, user


async def _flush_clients() -> None:
    """Close and drop litellm's cached clients, so that the next call builds one with the pool
    size (dropped unclosed, their sockets would warn in whichever test collects them)."""
    from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

    await close_litellm_async_clients()
    cache = getattr(litellm_module(), "in_memory_llm_clients_cache", None)
    if cache is not None:
        cache.flush_cache()


@pytest.fixture
async def pool() -> AsyncIterator[None]:
    """Restores the process's pool size (and litellm's clients) after the test."""
    chosen = _pool._chosen
    yield
    _pool._chosen = chosen
    _pool.apply_pool(litellm_module())
    await _flush_clients()


async def _peak_streams(loopback: LoopbackServer, app: Any, chats: int) -> int:
    """Open ``chats`` chats at once through ``app``; the most streams the provider had open."""
    import httpx

    loopback.script(*[text("a b c d", pieces=4, delay=0.15) for _ in range(chats)])
    peak = 0
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, loopback.open_streams)
            await asyncio.sleep(0.01)

    sampler = asyncio.ensure_future(sample())
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", timeout=30) as client:
        answers = await asyncio.gather(
            *[client.post("/api/chat", json=chat(f"s{i}", user("Hi"))) for i in range(chats)]
        )
    done.set()
    await sampler
    assert [a.status_code for a in answers] == [200] * chats
    for answer in answers:
        events = [x for x in sse_data(answer.content) if isinstance(x, dict)]
        assert "".join(x["delta"] for x in events if x["type"] == "text-delta") == "a b c d"
    return peak


async def test_max_connections_reaches_litellms_client(
    loopback: LoopbackServer, pool: None
) -> None:
    agent = hs.Agent(name="pool", model="openai/loopback", settings=_settings(loopback))
    executor = hs.Executor(store=hs.MemoryStore())
    await _flush_clients()
    capped = create_app(executor, agent, max_connections=2)
    assert await _peak_streams(loopback, capped, 5) == 2  # the other three waited
    await _flush_clients()
    roomy = create_app(executor, agent, max_connections=8)
    assert await _peak_streams(loopback, roomy, 5) == 5


def test_the_default_is_above_a_thousand_streams_and_the_app_choice_wins(
    pool: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from litellm.llms.custom_httpx import http_handler

    _pool._chosen = None
    monkeypatch.delenv(_pool.POOL_ENV, raising=False)
    _pool.apply_pool(litellm_module())
    assert _pool.DEFAULT_MAX_CONNECTIONS >= 1000
    assert http_handler.AIOHTTP_CONNECTOR_LIMIT_PER_HOST == _pool.DEFAULT_MAX_CONNECTIONS
    assert http_handler.AIOHTTP_CONNECTOR_LIMIT == _pool.DEFAULT_MAX_CONNECTIONS
    monkeypatch.setenv(_pool.POOL_ENV, "1500")  # the environment's wins over the default
    _pool.apply_pool(litellm_module())
    assert http_handler.AIOHTTP_CONNECTOR_LIMIT_PER_HOST == 1500
    _pool.set_max_connections(3000)  # the app's wins over the environment's
    assert http_handler.AIOHTTP_CONNECTOR_LIMIT_PER_HOST == 3000
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="positive int"):
            _pool.set_max_connections(bad)  # type: ignore[arg-type]
    assert http_handler.AIOHTTP_CONNECTOR_LIMIT_PER_HOST == 3000


def test_setting_it_does_not_import_litellm() -> None:
    code = (
        "import sys, helix_stream as hs\n"
        "from helix_stream.server import routes\n"
        "routes(hs.Executor(), hs.Agent(name='a', model='helix/demo'), max_connections=7)\n"
        "from helix_stream.models import _pool\n"
        "assert _pool.max_connections() == 7\n"
        "print('litellm' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "False", (out.stdout, out.stderr)


def test_serve_refuses_a_pool_of_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    from helix_stream.__main__ import main

    assert main(["serve", "--max-connections", "0", "--store", ":memory:"]) == 2
    assert "--max-connections must be 1 or more" in capsys.readouterr().err


def test_loading_litellm_gives_its_clients_the_default_pool() -> None:
    code = (
        "import os\n"
        "os.environ.pop('AIOHTTP_CONNECTOR_LIMIT_PER_HOST', None)\n"
        "from helix_stream.models import load_litellm\n"
        "from helix_stream.models._pool import DEFAULT_MAX_CONNECTIONS\n"
        "load_litellm()\n"
        "from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler\n"
        "transport = AsyncHTTPHandler.create_aiohttp_transport()\n"
        "import asyncio\n"
        "async def main():\n"
        "    session = transport.get_valid_client_session()\n"
        "    connector = session.connector\n"
        "    print(connector.limit, connector.limit_per_host, DEFAULT_MAX_CONNECTIONS)\n"
        "    await session.close()\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    limit, per_host, default = out.stdout.split()
    assert limit == per_host == default == "4096"


def _settings(loopback: LoopbackServer) -> dict[str, Any]:
    """The loopback's litellm params, but the model (an Agent's own argument)."""
    llm = loopback.llm()
    llm.pop("model")
    return llm
