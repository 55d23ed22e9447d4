"""The loopback OAuth server, started once for the auth tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.auth.oauth_server import OAuthServer


@pytest.fixture(scope="session")
def _oauth_server() -> Iterator[OAuthServer]:
    server = OAuthServer().start()
    yield server
    server.stop()


@pytest.fixture
def oauth(_oauth_server: OAuthServer) -> Iterator[OAuthServer]:
    """The loopback OAuth server, reset (no codes, no tokens, nothing recorded)."""
    _oauth_server.reset()
    yield _oauth_server
    _oauth_server.reset()
