"""Executor tests run on every store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import helix_stream as hs
from tests.store import _pg


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[hs.Store]:
    s: hs.Store
    if request.param == "memory":
        s = hs.MemoryStore()
    elif request.param == "sqlite":
        s = hs.SQLiteStore(str(tmp_path / "helix.db"))
    else:
        s = _pg.make_store()  # a fresh schema; skipped, with the reason, with no server
    try:
        yield s
    finally:
        await s.close()
        _pg.drop_schemas()


@pytest.fixture
def executor(store: hs.Store) -> hs.Executor:
    return hs.Executor(store=store)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    _pg.report(terminalreporter)
