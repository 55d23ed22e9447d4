"""Every refusal of the server: its HTTP status, its JSON body, and that it wrote nothing."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic import BaseModel
from starlette.requests import Request

import helix_stream as hs
from helix_stream.errors import AuthenticationError, PermissionDeniedError
from helix_stream.server import create_app
from tests._store import create_session
from tests.executor._util import snapshot
from tests.server.conftest import chat, user

SID = "s1"
ASSISTANT = {"id": "m1", "role": "assistant", "parts": [{"type": "text", "text": "Hi"}]}


@pytest.fixture
async def app(executor: hs.Executor, agent: hs.Agent) -> Any:
    await create_session(executor.store, SID, agent_name=agent.name)
    await executor.add_context(SID, [hs.notice("seeded")], key="seed")
    return create_app(executor, agent, max_body_bytes=2048)


def _error(response: Any) -> tuple[int, str, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert response.headers["content-type"] == "application/json"
    return response.status_code, body["error"]["code"], body["error"]["message"]


# (route, body, status, code, a piece of the message)
CASES: dict[str, tuple[str, Any, int, str, str]] = {
    "chat-not-json": ("/api/chat", b"{nope", 400, "invalid_request", "not valid JSON"),
    "chat-not-an-object": ("/api/chat", b"[1, 2]", 400, "invalid_request", "JSON object, not list"),
    "chat-no-id": ("/api/chat", {"messages": [user("Hi")]}, 400, "invalid_request", "id: Field required"),
    "chat-messages-not-a-list": (
        "/api/chat", {"id": SID, "messages": "Hi"}, 400, "invalid_request", "messages: Input should be a valid list"
    ),
    "chat-bad-role": (
        "/api/chat", chat(SID, {**user("Hi"), "role": "robot"}), 400, "invalid_request", "messages.0.role"
    ),
    "chat-no-messages": ("/api/chat", chat(SID), 400, "invalid_request", "messages: List should have at least 1"),
    "chat-user-without-text": (
        "/api/chat", chat(SID, {"id": "u1", "role": "user", "parts": [{"type": "step-start"}]}),
        400, "invalid_request", "no text or file part (parts: step-start)",
    ),
    "chat-file-of-unknown-type": (
        "/api/chat", chat(SID, {"id": "u1", "role": "user", "parts": [
            {"type": "file", "mediaType": "application/zip", "url": "data:application/zip;base64,UEsD"}]}),
        400, "invalid_request", "'application/zip' cannot be sent to the model",
    ),
    "chat-file-url-scheme": (
        "/api/chat", chat(SID, {"id": "u1", "role": "user", "parts": [
            {"type": "file", "mediaType": "image/png", "url": "file:///etc/passwd"}]}),
        400, "invalid_request", "data: URL or an https:// URL",
    ),
    "chat-last-is-system": (
        "/api/chat", chat(SID, {"id": "x", "role": "system", "parts": []}), 400, "invalid_request", "last message"
    ),
    "chat-bad-approval-part": (
        "/api/chat",
        chat(SID, user("Hi"), {"id": "m1", "role": "assistant", "parts": [
            {"type": "tool-deploy", "toolCallId": "c1", "state": "approval-responded"}]}),
        400, "invalid_request", "needs approval: {id, approved, reason?}",
    ),
    "chat-continue-unknown-session": (
        "/api/chat", chat("nope", user("Hi"), ASSISTANT), 404, "state_session_not_found", "'nope'"
    ),
    "chat-regenerate-unknown-message": (
        "/api/chat", chat(SID, user("Hi"), trigger="regenerate-message", messageId="msg-nope"), 400,
        "invalid_request", "no assistant message 'msg-nope'",
    ),
    "context-not-json": ("/context", b"sessionId=s1", 400, "invalid_request", "not valid JSON"),
    "context-extra-field": (
        "/context", {"sessionId": SID, "items": [], "sessionID": SID}, 400, "invalid_request",
        "sessionID: Extra inputs are not permitted",
    ),
    "context-items-not-a-list": (
        "/context", {"sessionId": SID, "items": {"kind": "notice"}}, 400, "invalid_request", "items"
    ),
    "context-unknown-kind": (
        "/context", {"sessionId": SID, "items": [{"kind": "bogus"}]}, 400, "validation_error", "item 0"
    ),
    "context-finish-switched-off": (
        "/context", {"sessionId": SID, "items": [hs.disable_tools(["__finish__"])]}, 400,
        "validation_error", "__finish__",
    ),
    "context-hook-source": (
        "/context", {"sessionId": SID, "items": [{"kind": "notice", "content": "x", "source": "hook"}]},
        400, "validation_error", "reserved",
    ),
    "context-unknown-session": (
        "/context", {"sessionId": "nope", "items": [hs.notice("x")]}, 404, "state_session_not_found", "'nope'"
    ),
    "context-key-conflict": (
        "/context", {"sessionId": SID, "items": [hs.notice("other")], "key": "seed"}, 409,
        "state_context_key_conflict", "seed",
    ),
    "chat-too-large": ("/api/chat", chat(SID, user("x" * 3000)), 413, "payload_too_large", "2048 bytes"),
    "context-too-large": (
        "/context", {"sessionId": SID, "items": [hs.notice("x" * 3000)]}, 413, "payload_too_large", "2048"
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
async def test_a_refused_post_answers_its_error_and_writes_nothing(
    app: Any, executor: hs.Executor, make_client: Any, case: str
) -> None:
    path, body, status, code, message = CASES[case]
    before = (await snapshot(executor.store, SID), await snapshot(executor.store, "nope"))
    client = make_client(app)
    if isinstance(body, bytes):
        response = await client.post(
            path, content=body, headers={"content-type": "application/json"}
        )
    else:
        response = await client.post(path, json=body)
    got_status, got_code, got_message = _error(response)
    assert (got_status, got_code) == (status, code), got_message
    assert message in got_message
    after = (await snapshot(executor.store, SID), await snapshot(executor.store, "nope"))
    assert after == before


async def test_a_body_streamed_without_content_length_is_cut_off_at_the_limit(
    app: Any, executor: hs.Executor, make_client: Any
) -> None:
    sent: list[int] = []

    async def body() -> AsyncIterator[bytes]:
        for _ in range(100):  # 100 KB in all, no content-length (chunked)
            sent.append(1)
            yield b" " * 1024

    before = await snapshot(executor.store, SID)
    response = await make_client(app).post("/context", content=body())
    assert "content-length" not in response.request.headers
    assert _error(response)[:2] == (413, "payload_too_large")
    assert len(sent) < 10  # refused as it arrived, not after reading all of it
    assert await snapshot(executor.store, SID) == before


async def test_unknown_sessions_on_the_get_routes(
    app: Any, executor: hs.Executor, make_client: Any
) -> None:
    client = make_client(app)
    # A new chat: the id is the client's, the session starts with its first message. Until
    # then its message list is empty (useChat loads it on every new page), and nothing is made.
    response = await client.get("/api/chat/nope/messages")
    assert (response.status_code, response.json()) == (200, [])
    assert await executor.store.get_session("nope") is None
    # Resuming answers 204 (nothing to resume) whether or not the session exists: the AI SDK
    # client treats 204 as "no active stream", anything else as a failure.
    assert (await client.get("/api/chat/nope/stream")).status_code == 204


async def test_unknown_paths_and_methods_answer_json(app: Any, make_client: Any) -> None:
    client = make_client(app)
    assert _error(await client.get("/api/chat"))[:2] == (405, "method_not_allowed")
    assert _error(await client.get("/nowhere"))[:2] == (404, "not_found")


async def test_a_busy_session_is_refused_before_a_stream_starts(
    app: Any, executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    await executor.store.set_status(SID, "running")
    before = await snapshot(executor.store, SID)
    rejecting = create_app(executor, agent, max_body_bytes=2048, turn_policy="reject")
    response = await make_client(rejecting).post("/api/chat", json=chat(SID, user("Hi")))
    assert _error(response)[:2] == (409, "state_session_busy")
    assert await snapshot(executor.store, SID) == before


class Tenant(BaseModel):
    name: str


async def test_a_missing_tools_context_is_refused_before_anything_is_written(
    executor: hs.Executor, make_client: Any
) -> None:
    @hs.tool(context_schema=Tenant)
    def whoami(ctx: hs.ToolContext) -> str:
        """Who."""
        return ctx.context.name

    app = create_app(executor, hs.Agent(name="a", model="helix/demo", tools=[whoami]))
    response = await make_client(app).post("/api/chat", json=chat("fresh", user("whoami")))
    status, code, message = _error(response)
    assert (status, code) == (400, "validation_error") and "tools_context" in message
    assert await executor.store.get_session("fresh") is None


def _refuse(error: Exception) -> Any:
    def authenticate(request: Request) -> Any:
        raise error

    return authenticate


ROUTES = [
    ("POST", "/api/chat", chat(SID, user("Hi"))),
    ("POST", "/context", {"sessionId": SID, "items": [hs.notice("x")]}),
    ("GET", f"/api/chat/{SID}/messages", None),
    ("GET", f"/api/chat/{SID}/stream", None),
]


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (AuthenticationError("who are you?"), 401, "unauthenticated"),
        (PermissionDeniedError("not your session"), 403, "forbidden"),
    ],
    ids=["401", "403"],
)
@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[p for _, p, _ in ROUTES])
async def test_authenticate_refuses_every_route_and_nothing_is_written(
    executor: hs.Executor,
    agent: hs.Agent,
    make_client: Any,
    error: Exception,
    status: int,
    code: str,
    method: str,
    path: str,
    body: Any,
) -> None:
    await create_session(executor.store, SID, agent_name=agent.name)
    app = create_app(executor, agent, _refuse(error))
    before = await snapshot(executor.store, SID)
    response = await make_client(app).request(method, path, json=body)
    assert _error(response) == (status, code, str(error))
    assert await snapshot(executor.store, SID) == before


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=[p for _, p, _ in ROUTES])
async def test_authorize_keeps_callers_to_their_own_sessions(
    executor: hs.Executor, agent: hs.Agent, make_client: Any, method: str, path: str, body: Any
) -> None:
    seen: list[tuple[Any, str]] = []

    async def authorize(auth: Any, session_id: str) -> None:
        seen.append((auth, session_id))
        if auth != "owner":
            raise PermissionDeniedError(f"{session_id!r} is not yours")

    await create_session(executor.store, SID, agent_name=agent.name)
    app = create_app(
        executor, agent, lambda request: request.headers["x-user"], authorize=authorize
    )
    before = await snapshot(executor.store, SID)
    client = make_client(app)
    response = await client.request(method, path, json=body, headers={"x-user": "mallory"})
    assert _error(response) == (403, "forbidden", "'s1' is not yours")
    assert seen == [("mallory", SID)]
    assert await snapshot(executor.store, SID) == before
    allowed = await client.request(method, path, json=body, headers={"x-user": "owner"})
    assert allowed.status_code in (200, 204)


async def test_an_unexpected_exception_is_a_masked_500_and_is_logged(
    executor: hs.Executor, agent: hs.Agent, make_client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(executor, agent, _refuse(RuntimeError("db password=hunter2")))
    with caplog.at_level(logging.ERROR, logger="helix_stream.server"):
        response = await make_client(app).post("/api/chat", json=chat(SID, user("Hi")))
    assert _error(response) == (500, "internal_error", "An internal error occurred.")
    assert "hunter2" not in response.text and "Traceback" not in response.text
    assert any("hunter2" in (r.exc_text or "") for r in caplog.records)
