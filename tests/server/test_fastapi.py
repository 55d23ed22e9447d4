"""``fastapi_router``: the chat routes in a FastAPI app's OpenAPI schema, answering as ever."""

from __future__ import annotations

import json
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import fastapi_router, lifespan
from tests.server.conftest import chat, user

fastapi = pytest.importorskip(
    "fastapi", reason="fastapi_router needs fastapi (pip install fastapi)"
)


def _app(executor: hs.Executor, agent: hs.Agent) -> Any:
    app = fastapi.FastAPI(lifespan=lifespan)
    app.include_router(fastapi_router(executor, agent))
    return app


async def test_the_chat_routes_are_documented_with_their_bodies(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    schema = (await make_client(_app(executor, agent)).get("/openapi.json")).json()
    paths = schema["paths"]
    assert sorted((p, sorted(ops)) for p, ops in paths.items()) == [
        ("/api/auth/callback", ["get"]),
        ("/api/chat", ["post"]),
        ("/api/chat/{id}/messages", ["get"]),
        ("/api/chat/{id}/stop", ["post"]),
        ("/api/chat/{id}/stream", ["get"]),
        ("/context", ["post"]),
    ]
    body = paths["/api/chat"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["required"] == ["id", "messages"]
    message = body["properties"]["messages"]["items"]
    assert message["properties"]["role"]["enum"] == ["system", "user", "assistant"]
    assert "$ref" not in json.dumps(schema)  # every body stands alone
    assert paths["/api/chat/{id}/stop"]["post"]["parameters"][0]["name"] == "id"
    assert (
        "text/event-stream" in paths["/api/chat/{id}/stream"]["get"]["responses"]["200"]["content"]
    )
    assert paths["/api/chat"]["post"]["tags"] == ["chat"]
    callback = paths["/api/auth/callback"]["get"]["parameters"]
    assert [(q["name"], q["required"]) for q in callback] == [
        ("state", True),
        ("code", False),
        ("error", False),
    ]


async def test_they_answer_as_the_plain_routes_do(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(_app(executor, agent))
    # The package checks the body, not FastAPI: a bad one is our 400, never FastAPI's 422.
    bad = await client.post("/api/chat", json={"id": "s1"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_request"
    ok = await client.post("/api/chat", json=chat("s1", user("Hi")))
    assert ok.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert ok.text.endswith("data: [DONE]\n\n")
    assert [m["role"] for m in (await client.get("/api/chat/s1/messages")).json()] == [
        "user",
        "assistant",
    ]
    assert (await client.post("/api/chat/s1/stop")).json() == {"stopped": False}
