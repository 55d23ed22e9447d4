"""What the demo page and the sign-in callback page are sent (the browser tests in
``tests/browser/`` show what a user sees of it): a failed turn's ``errorText`` is the error's
code on the demo, never the provider's text, and the stored message keeps that code; the
callback page tells the chat tab, with every value escaped inside its script."""

from __future__ import annotations

import json
from typing import Any

import httpx

import helix_stream as hs
from helix_stream.auth import AuthorizationResult
from helix_stream.server._auth_callback import _done_page
from helix_stream.server._demo import demo_app
from tests.loopback import LoopbackServer, error, text
from tests.server._asgi import sse_data
from tests.server.conftest import chat, client, user


def _agent(loopback: LoopbackServer) -> hs.Agent:
    return hs.Agent(
        name="helix-demo",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        max_retries=0,
    )


async def _post(app: Any, body: dict[str, Any]) -> httpx.Response:
    async with client(app) as c:
        return await c.post("/api/chat", json=body)


async def _messages(app: Any, session: str) -> list[dict[str, Any]]:
    async with client(app) as c:
        messages: list[dict[str, Any]] = (await c.get(f"/api/chat/{session}/messages")).json()
        return messages


async def test_a_failed_turn_sends_and_stores_its_code_not_the_providers_text(
    warm_loopback: LoopbackServer,
) -> None:
    warm_loopback.script(error(429, "slow down, key sk-123"), text("Back."))
    executor = hs.Executor(store=hs.MemoryStore())
    app = demo_app(executor, _agent(warm_loopback))
    response = await _post(app, chat("s1", user("Hello")))
    assert response.status_code == 200
    errors = [c for c in sse_data(response.content) if isinstance(c, dict) and c["type"] == "error"]
    assert errors == [{"type": "error", "errorText": "model_rate_limited"}]
    assert b"slow down" not in response.content and b"sk-123" not in response.content
    stored = await _messages(app, "s1")
    assert [m["role"] for m in stored] == ["user", "assistant"]
    assert stored[1]["metadata"] == {"interrupted": True, "error": "model_rate_limited"}
    assert "slow down" not in json.dumps(stored)
    # The session goes on, and the next answer carries no failure.
    stored_ids = [m["id"] for m in stored]
    response = await _post(app, chat("s1", *stored, user("Again", id="u2")))
    assert response.status_code == 200
    stored = await _messages(app, "s1")
    assert [m["id"] for m in stored[:2]] == stored_ids
    assert stored[2:] and "metadata" not in stored[3]
    assert stored[1]["metadata"]["error"] == "model_rate_limited"  # the failure stays told


def test_the_callback_page_tells_the_chat_tab_with_escaped_values() -> None:
    result = AuthorizationResult(
        session_id="s</script><script>alert(1)</script>&",
        tool_call_id="call_1",
        strategy="calendar",
        status="authorized",
    )
    page = bytes(_done_page(result).body).decode()
    assert "</script><script>alert(1)" not in page
    script = page[page.index("const done = ") + len("const done = ") : page.index(";\n")]
    assert json.loads(script) == {
        "type": "helix-auth",
        "sessionId": "s</script><script>alert(1)</script>&",
        "toolCallId": "call_1",
        "status": "authorized",
    }
    assert 'new BroadcastChannel("helix-stream-auth").postMessage(done)' in page
    assert "window.opener.postMessage(done, location.origin)" in page
