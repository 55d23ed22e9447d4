"""Store tests: every schema a postgres test made is dropped after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.store import _pg


@pytest.fixture(autouse=True)
def _drop_postgres_schemas() -> Iterator[None]:
    # Autouse, so set up before (and torn down after) the store fixture that closes the store.
    yield
    _pg.drop_schemas()
