"""A front end on another origin (CORS), and the message list of a chat that has none yet."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware

import helix_stream as hs
from helix_stream.errors import PermissionDeniedError
from helix_stream.server import cors_options, create_app, routes
from tests.loopback import LoopbackServer, error
from tests.server.conftest import chat, user

FRONT = "http://localhost:5173"
PREFLIGHT = {
    "origin": FRONT,
    "access-control-request-method": "POST",
    "access-control-request-headers": "content-type,authorization",
}


async def test_a_preflight_from_a_listed_origin_is_answered(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent, cors_origins=[FRONT]))
    for path in ("/api/chat", "/api/chat/s1/stop", "/context"):
        answer = await client.options(path, headers=PREFLIGHT)
        assert answer.status_code == 200, path
        assert answer.headers["access-control-allow-origin"] == FRONT
        assert "POST" in answer.headers["access-control-allow-methods"]
        assert answer.headers["access-control-allow-headers"] == "content-type,authorization"
        assert answer.headers["access-control-allow-credentials"] == "true"
    get = {**PREFLIGHT, "access-control-request-method": "GET"}
    assert (await client.options("/api/chat/s1/stream", headers=get)).status_code == 200
    # The stream itself carries the headers the browser needs to hand it to the page.
    response = await client.post(
        "/api/chat", json=chat("s1", user("Hi")), headers={"origin": FRONT}
    )
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == FRONT
    assert response.headers["access-control-expose-headers"] == "x-vercel-ai-ui-message-stream"
    assert response.text.endswith("data: [DONE]\n\n")
    resumed = await client.get("/api/chat/s1/stream", headers={"origin": FRONT})
    assert resumed.status_code == 204
    assert resumed.headers["access-control-allow-origin"] == FRONT


async def test_an_unlisted_origin_is_refused_and_without_cors_origins_there_is_no_cors(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    listed = make_client(create_app(executor, agent, cors_origins=[FRONT]))
    other = {**PREFLIGHT, "origin": "https://evil.example"}
    refused = await listed.options("/api/chat", headers=other)
    assert refused.status_code == 400
    assert "access-control-allow-origin" not in refused.headers
    plain = make_client(create_app(executor, agent))
    assert (await plain.options("/api/chat", headers=PREFLIGHT)).status_code == 405


async def test_any_origin_never_allows_credentials(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent, cors_origins=["*"]))
    answer = await client.options("/api/chat", headers=PREFLIGHT)
    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in answer.headers


async def test_routes_users_wrap_their_app_with_the_same_settings(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    app = Starlette(routes=routes(executor, agent))
    app.add_middleware(CORSMiddleware, **cors_options([FRONT]))
    answer = await make_client(app).options("/api/chat", headers=PREFLIGHT)
    assert (answer.status_code, answer.headers["access-control-allow-origin"]) == (200, FRONT)


def test_a_single_origin_string_is_refused() -> None:
    with pytest.raises(TypeError, match="a list of origins"):
        cors_options(FRONT)


async def test_the_messages_of_a_new_chat_are_an_empty_list_after_authorize(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    def authorize(auth: Any, session_id: str) -> None:
        if not session_id.startswith("mine-"):
            raise PermissionDeniedError("not yours")

    client = make_client(create_app(executor, agent, authorize=authorize))
    fresh = await client.get("/api/chat/mine-new/messages")
    assert (fresh.status_code, fresh.json()) == (200, [])
    other = await client.get("/api/chat/theirs/messages")
    assert (other.status_code, other.json()["error"]["code"]) == (403, "forbidden")
    assert await executor.store.get_session("mine-new") is None  # reading made nothing


async def test_each_failed_attempt_is_one_log_line_with_the_session_and_no_banner(
    executor: hs.Executor,
    loopback: LoopbackServer,
    make_client: Any,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    agent = hs.Agent(
        name="down",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )
    # Three attempts (max_retries=2), each a 503; Retry-After 0 keeps the test fast.
    loopback.script(*[error(503, "overloaded", {"retry-after": "0"}) for _ in range(3)])
    client = make_client(create_app(executor, agent))
    with caplog.at_level(logging.WARNING, logger="helix_stream.models"):
        response = await client.post("/api/chat", json=chat("down-1", user("Hi")))
    assert '"type":"error"' in response.text
    lines = [r for r in caplog.records if getattr(r, "event", None) == "core.model.attempt_failed"]
    assert [r.getMessage().split(":")[0] for r in lines] == ["session 'down-1'"] * 3
    assert [getattr(r, "session_id", None) for r in lines] == ["down-1"] * 3
    assert "attempt 1 failed" in lines[0].getMessage()
    assert (
        lines[0]
        .getMessage()
        .endswith("ModelUnavailableError (model_unavailable); retrying in 0.0 s")
    )
    assert lines[2].getMessage().endswith("; no retry")
    assert len(loopback.requests) == 3
    printed = capfd.readouterr()
    assert "Give Feedback" not in printed.out + printed.err
