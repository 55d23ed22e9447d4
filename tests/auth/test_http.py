"""The whole sign-in through the chat server's HTTP routes: chat → a ``data-authorization``
part → the browser follows its URL (the loopback OAuth server, real HTTP) → the callback route
→ the chat page resumes (``POST /api/chat`` with no new message) → the turn goes on, and the
tool ran once, with the token. A replayed callback is a 400 that writes nothing. No token,
code, verifier or client secret is in the SSE bodies, the model's requests, the database, the
span exporter's output or the hook events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.transformers import read_ui_message
from tests.auth._session import SECRET, Calendar, agent, assert_absent, secrets_of, sqlite_rows
from tests.auth.oauth_server import OAuthServer
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server._asgi import sse_data
from tests.server.conftest import chat, make_client, message_ids, user

__all__ = ["make_client"]  # the server tests' fixture, used here too

CALL = "call_0_list_events"
CALLBACK = "http://testserver/api/auth/callback"


async def browse(client: httpx.AsyncClient, url: str, **headers: str) -> httpx.Response:
    """A browser following a sign-in link: to the OAuth server, then back to our callback."""
    async with httpx.AsyncClient() as outside:
        location = (await outside.get(url)).headers["location"]
    parts = urlsplit(location)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == CALLBACK
    return await client.get(f"{parts.path}?{parts.query}", headers=headers)


@pytest.mark.parametrize("redirect", [None, "https://chat.example.com/back?from=auth"])
async def test_chat_sign_in_callback_and_the_turn_goes_on(
    loopback: LoopbackServer,
    oauth: OAuthServer,
    tmp_path: Path,
    make_client: Any,
    redirect: str | None,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    events: list[Any] = []
    hook = hs.define_hook(events={"*": lambda event, ctx: events.append(dict(event.data))})
    calendar = Calendar()
    executor = hs.Executor(
        hs.SQLiteStore(tmp_path / "s.db"),
        auth_secret=SECRET,
        telemetry=hs.TelemetrySettings(tracer_provider=provider, record_outputs=True),
    )
    bot = agent(loopback, calendar.tools(oauth.strategy(redirect_uri=CALLBACK)), hooks=[hook])
    app = create_app(executor, bot, generate_message_id=message_ids(), auth_redirect=redirect)
    client = make_client(app)
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("One standup."))
    question = user("What is on monday?")

    first = await client.post("/api/chat", json=chat("s1", question))
    parts = sse_data(first.content)
    (part,) = [p for p in parts if isinstance(p, dict) and p["type"] == "data-authorization"]
    assert part["id"] == f"authorization-{CALL}"
    assert part["data"]["toolCallId"] == CALL and part["data"]["strategy"] == "loopback"
    assert part["data"]["url"].startswith(oauth.authorize_url + "?")
    assert parts[-3:] == [
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
        "[DONE]",
    ]
    shown = read_ui_message(parts[:-1])
    assert shown["parts"][-1] == {
        "type": "data-authorization",
        **{k: part[k] for k in ("id", "data")},
    }
    assert (await executor.session("s1")).status == "paused"
    reloaded = (await client.get("/api/chat/s1/messages")).json()
    assert reloaded[1]["parts"] == shown["parts"]  # a reload shows the sign-in link too

    answer = await browse(client, part["data"]["url"], accept="text/html")
    if redirect is None:
        assert answer.status_code == 200 and "text/html" in answer.headers["content-type"]
        assert "You are signed in to loopback" in answer.text
    else:
        assert answer.status_code == 303
        back = urlsplit(answer.headers["location"])
        assert back.netloc == "chat.example.com" and back.path == "/back"
        assert dict(parse_qsl(back.query)) == {
            "from": "auth",
            "session_id": "s1",
            "tool_call_id": CALL,
            "status": "authorized",
        }

    # The chat page resumes: the same messages, no new one.
    second = await client.post("/api/chat", json=chat("s1", question, shown))
    rest = sse_data(second.content)
    assert rest[0] == {"type": "start", "messageId": "msg-1"}
    final = read_ui_message(rest[:-1], message=shown)
    tool_part = next(p for p in final["parts"] if p.get("toolCallId") == CALL and "state" in p)
    assert tool_part["state"] == "output-available"
    assert tool_part["output"]["events"] == ["standup"]
    assert final["parts"][-1] == {"type": "text", "text": "One standup.", "state": "done"}
    assert calendar.tokens == [oauth.issued[0]]
    assert (await executor.session("s1")).status == "idle"
    reloaded = (await client.get("/api/chat/s1/messages")).json()
    assert [p["type"] for p in reloaded[1]["parts"]].count("data-authorization") == 0
    assert reloaded[1]["parts"][-1] == final["parts"][-1]

    spans = "\n".join(s.to_json() for s in exporter.get_finished_spans())
    assert '"helix.auth.parked": true' in spans and "helix.auth.sign_in_required" in spans
    assert "helix.auth.token_resolved" in spans
    await executor.store.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert_absent(
        secrets_of(oauth),
        first.content,
        second.content,
        answer.content,
        answer.headers.get("location", ""),
        *loopback.requests,
        stored,
        spans,
        json.dumps(events, default=repr),
    )


async def test_a_replayed_or_missing_state_is_a_400_that_writes_nothing(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path, make_client: Any
) -> None:
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    bot = agent(loopback, Calendar().tools(oauth.strategy(redirect_uri=CALLBACK)))
    client = make_client(create_app(executor, bot))
    loopback.script(tool_calls(("list_events", {"day": "monday"})))
    parts = sse_data((await client.post("/api/chat", json=chat("s1", user("Monday?")))).content)
    (part,) = [p for p in parts if isinstance(p, dict) and p["type"] == "data-authorization"]
    async with httpx.AsyncClient() as outside:
        location = urlsplit((await outside.get(part["data"]["url"])).headers["location"])
    callback = f"{location.path}?{location.query}"
    assert (await client.get(callback)).status_code == 200

    before = sqlite_rows(tmp_path / "s.db")
    replayed = await client.get(callback)
    assert replayed.status_code == 400
    assert replayed.json()["error"]["code"] == "authorization_state_invalid"
    page = await client.get(callback, headers={"accept": "text/html,*/*"})
    assert page.status_code == 400 and "cannot be used" in page.text
    missing = await client.get("/api/auth/callback?code=abc")
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "authorization_state_invalid"
    assert sqlite_rows(tmp_path / "s.db") == before
    query = dict(parse_qsl(location.query))
    assert query["code"] not in replayed.text + page.text
    await executor.store.close()


async def test_the_callback_path_is_configurable(
    loopback: LoopbackServer, oauth: OAuthServer, make_client: Any
) -> None:
    bot = agent(loopback, Calendar().tools(oauth.strategy()))
    moved = make_client(
        create_app(hs.Executor(auth_secret=SECRET), bot, auth_callback_path="/oauth/back")
    )
    assert (await moved.get("/oauth/back?state=x.y.z&code=c")).status_code == 400
    assert (await moved.get("/api/auth/callback?state=x.y.z&code=c")).status_code == 404
    none = make_client(create_app(hs.Executor(auth_secret=SECRET), bot, auth_callback_path=None))
    assert (await none.get("/api/auth/callback?state=x.y.z&code=c")).status_code == 404
