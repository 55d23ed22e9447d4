"""A tool's sign-in through the ``ai`` package's own chat (``AbstractChat``, what ``useChat``
wraps; ai@5, 6 and 7): the ``data-authorization`` part arrives, is kept in the message and
does not break the chat; the page follows its URL (the loopback OAuth server redirects to the
server's callback), calls ``sendMessage()`` with no message, and the same assistant message
gets the tool's output and the answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.auth import OAuthStrategy
from helix_stream.server import create_app
from tests.auth._session import SECRET, Calendar, agent, assert_absent, secrets_of
from tests.auth.oauth_server import OAuthServer
from tests.conformance._client import (
    AI_VERSIONS,
    ensure_ai,
    missing_node_reason,
    run_chat,
    serve_app,
)
from tests.loopback import LoopbackServer, text, tool_calls

CALL = "call_0_list_events"


class ServedCallback:
    """An interactive strategy of the test's own (the protocol, not ``hs.oauth_auth``): the
    server's callback URL, its redirect URI, is known once the app is served."""

    name = "loopback"

    def __init__(self) -> None:
        self.inner: OAuthStrategy | None = None

    def authorization_url(self, state: str, code_challenge: str) -> str:
        assert self.inner is not None
        return self.inner.authorization_url(state, code_challenge)

    async def exchange(self, code: str, code_verifier: str) -> hs.Token:
        assert self.inner is not None
        return await self.inner.exchange(code, code_verifier)


@pytest.mark.parametrize("version", AI_VERSIONS, ids=[f"ai@{v}" for v in AI_VERSIONS])
def test_the_sign_in_part_reaches_use_chat_and_the_chat_resumes(
    loopback: LoopbackServer, oauth: OAuthServer, version: int
) -> None:
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    ensure_ai(version)
    calendar, strategy = Calendar(), ServedCallback()
    bot = agent(loopback, calendar.tools(strategy))
    executor = hs.Executor(auth_secret=SECRET)
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("One standup."))
    with serve_app(create_app(executor, bot, client_version=version)) as base_url:
        strategy.inner = oauth.strategy(redirect_uri=f"{base_url}/api/auth/callback")
        scenario: dict[str, Any] = {
            "id": f"auth-{version}",
            "actions": [{"send": {"text": "What is on monday?"}}, {"signIn": {}}, {"continue": {}}],
        }
        result = run_chat(f"{base_url}/api/chat", scenario, version)
    assert int(result["aiVersion"].split(".")[0]) == version
    asked, signed, resumed = result["steps"]

    assert (asked["status"], asked["error"]) == ("ready", None)
    parts = asked["messages"][-1]["parts"]
    (link,) = [p for p in parts if p["type"] == "data-authorization"]
    assert link["id"] == f"authorization-{CALL}"
    assert (link["data"]["toolCallId"], link["data"]["strategy"]) == (CALL, "loopback")
    tool = next(
        p for p in parts if p.get("toolCallId") == CALL and p["type"] != "data-authorization"
    )
    assert tool["state"] == "input-available"  # waiting: no output yet

    assert signed["signedIn"]["status"] == 200
    assert signed["signedIn"]["url"].startswith(f"{base_url}/api/auth/callback?")
    assert "You are signed in to loopback" in signed["signedIn"]["text"]

    assert (resumed["status"], resumed["error"]) == ("ready", None)
    assert [m["role"] for m in resumed["messages"]] == ["user", "assistant"]  # one message
    final = resumed["messages"][-1]["parts"]
    tool = next(
        p for p in final if p.get("toolCallId") == CALL and p["type"] != "data-authorization"
    )
    assert tool["state"] == "output-available" and tool["output"]["events"] == ["standup"]
    assert final[-1]["type"] == "text" and final[-1]["text"] == "One standup."
    assert calendar.tokens == [oauth.issued[0]]
    # No secret in what the chat holds (the browser's callback URL has the code: its own).
    chat_state = json.dumps([asked["messages"], resumed["messages"]])
    assert_absent(secrets_of(oauth), chat_state, *loopback.requests)
