"""``POST /context`` with a tools item naming a tool the agent does not have: recorded, with a
warning in the answer; an invalid item is still refused whole, with nothing written."""

from __future__ import annotations

from typing import Any

import helix_stream as hs
from helix_stream.server import create_app
from tests._store import pending_context
from tests.server.conftest import chat, user


async def test_an_unknown_tool_is_recorded_with_a_warning(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent))
    assert (await client.post("/api/chat", json=chat("s1", user("Hello")))).status_code == 200

    body = {"sessionId": "s1", "items": [{"kind": "tools", "disable": ["get_wether"]}]}
    response = await client.post("/context", json=body)
    assert (response.status_code, response.json()) == (
        200,
        {"recorded": 1, "warnings": ["unknown tool 'get_wether'"]},
    )
    [entry] = await pending_context(executor.store, "s1")
    assert entry.items[0]["disable"] == ["get_wether"]

    # A name the agent has: the answer is as it always was.
    body = {"sessionId": "s1", "items": [{"kind": "tools", "disable": ["get_weather"]}]}
    response = await client.post("/context", json=body)
    assert (response.status_code, response.json()) == (200, {"recorded": 1})


async def test_an_invalid_item_beside_an_unknown_tool_is_refused_and_nothing_is_written(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent))
    assert (await client.post("/api/chat", json=chat("s1", user("Hello")))).status_code == 200
    items = [{"kind": "tools", "disable": ["get_wether"]}, {"kind": "tools"}]
    response = await client.post("/context", json={"sessionId": "s1", "items": items})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "validation_error"
    assert "warnings" not in response.json()
    assert await pending_context(executor.store, "s1") == []
