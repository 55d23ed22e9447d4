"""Shared fixtures. litellm must not reach the network for its cost map."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.auth.oauth_server import OAuthServer
from tests.loopback import LoopbackServer
from tests.store import _pg


@pytest.fixture(scope="session")
def _loopback_server() -> Iterator[LoopbackServer]:
    server = LoopbackServer().start()
    yield server
    server.stop()


@pytest.fixture
def loopback(_loopback_server: LoopbackServer) -> Iterator[LoopbackServer]:
    """The loopback OpenAI-compatible server, with an empty script and no recorded requests."""
    _loopback_server.reset()
    yield _loopback_server
    _loopback_server.reset()


@pytest.fixture
async def warm_loopback(loopback: LoopbackServer) -> LoopbackServer:
    """The loopback server after one answered call: litellm's first call in a process does
    seconds of set-up, which a test that times limits must not measure."""
    import helix_stream as hs
    from tests.loopback import text

    loopback.script(text("warm"))
    assert await hs.stream_text(**loopback.llm(), prompt="w").text()
    loopback.reset()
    return loopback


@pytest.fixture(scope="session")
def _oauth_server() -> Iterator[OAuthServer]:
    server = OAuthServer().start()
    yield server
    server.stop()


@pytest.fixture
def oauth(_oauth_server: OAuthServer) -> Iterator[OAuthServer]:
    """The loopback OAuth server (authorize + token, PKCE checked), reset: no codes, no
    tokens, nothing recorded (tests/auth/oauth_server.py)."""
    _oauth_server.reset()
    yield _oauth_server
    _oauth_server.reset()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # Here, at the root, so that any run that skipped a postgres test says so, loudly.
    _pg.report(terminalreporter)


@pytest.fixture(scope="module", autouse=True)
async def _litellm_clients_closed_per_module() -> AsyncIterator[None]:
    """Close litellm's cached HTTP clients after each test module.

    litellm keeps up to 200 clients, one per provider, base URL and key. The suite's many
    loopback servers and keys fill that cache, and litellm then evicts the oldest clients.
    Their sockets are closed by the garbage collector rather than by aiohttp, and the
    ResourceWarning shows up in whichever later test the collector runs in. A server talks to
    a few providers and never gets near the limit.
    """
    yield
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return  # nothing made a client: litellm was never imported here
    from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients

    await close_litellm_async_clients()
    litellm.in_memory_llm_clients_cache.flush_cache()
