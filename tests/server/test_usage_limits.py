"""A session over its budget is refused over HTTP as it is in Python: 429
``usage_limit_exceeded``, before a stream starts, with nothing written."""

from __future__ import annotations

from typing import Any

import helix_stream as hs
from helix_stream.server import create_app
from tests.executor._util import snapshot
from tests.server.conftest import chat, user

SID = "s1"


async def test_a_session_over_its_limit_is_refused_with_429(
    executor: hs.Executor, make_client: Any
) -> None:
    agent = hs.Agent(name="capped", model="helix/demo", session_limits=hs.UsageLimits(requests=1))
    client = make_client(create_app(executor, agent))
    first = await client.post("/api/chat", json=chat(SID, user("Hi")))
    assert first.status_code == 200
    assert (await executor.usage(SID)).requests == 1
    before = await snapshot(executor.store, SID)
    response = await client.post("/api/chat", json=chat(SID, user("Hi"), user("Again", "u2")))
    body = response.json()
    assert response.status_code == 429
    assert body["error"]["code"] == "usage_limit_exceeded"
    assert await snapshot(executor.store, SID) == before
