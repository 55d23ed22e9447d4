"""Shared fixtures. litellm must not reach the network for its cost map."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from collections.abc import Iterator

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
