"""Executor tests run on every store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import helix_stream as hs


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[hs.Store]:
    s: hs.Store = (
        hs.MemoryStore()
        if request.param == "memory"
        else hs.SQLiteStore(str(tmp_path / "helix.db"))
    )
    yield s
    await s.close()


@pytest.fixture
def executor(store: hs.Store) -> hs.Executor:
    return hs.Executor(store=store)
