"""Fixtures of the model tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from helix_stream.models import _lean_stream
from tests.models._replay import ReplayServer, record_readers


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The direct readers made (``None`` for each stream litellm kept)."""
    yield record_readers(monkeypatch)
    _lean_stream.enabled = True


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()
