"""An expired OAuth token is refreshed before a new sign-in is asked for (through
``stream_text``, the loopback model and the loopback OAuth server); a refused refresh is a
miss, and the dead token leaves the store."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.auth import OAuthStrategy
from tests.auth.oauth_server import CLIENT_SECRET, OAuthServer, sign_in
from tests.auth.test_stream_text import spans_text, tool_spans, tracing
from tests.loopback import LoopbackServer, text, tool_calls


class Day(BaseModel):
    day: str


async def expire(store: hs.MemoryTokenStore, name: str, **changes: object) -> hs.Token:
    token = await store.get(name, "app")
    assert token is not None
    expired = dataclasses.replace(token, expires_at=1.0, **changes)  # type: ignore[arg-type]
    await store.put(name, "app", expired)
    return expired


def calendar_tool(strategy: OAuthStrategy, got: list[str]) -> hs.Tool:
    async def calendar(input: Day, ctx: hs.ToolContext) -> str:
        got.append((await ctx.get_token()).token)
        return "2 meetings"

    return hs.tool(name="calendar", input_schema=Day, execute=calendar, auth=strategy)


async def test_an_expired_token_is_refreshed_and_the_fresh_one_kept(
    loopback: LoopbackServer, oauth: OAuthServer
) -> None:
    strategy, store = oauth.strategy(name="cal-refresh"), hs.MemoryTokenStore()
    await sign_in(oauth, strategy, store, "app")
    old = await expire(store, "cal-refresh")
    got: list[str] = []
    settings, exporter = tracing()
    loopback.script(tool_calls(("calendar", {"day": "today"})), text("Two meetings."))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="my day",
        tools=[calendar_tool(strategy, got)],
        token_store=store,
        telemetry=settings,
    )
    assert await result.text() == "Two meetings."
    assert oauth.token_requests[-1]["form"]["grant_type"] == "refresh_token"
    assert got == [oauth.issued[-1]] and got[0] != old.token
    kept = await store.get("cal-refresh", "app")
    assert kept is not None and kept.token == got[0] and not kept.expired()
    (span,) = tool_spans(exporter)
    assert span.attributes["helix.auth.token_source"] == "refresh"
    secrets = [
        old.token,
        got[0],
        old.refresh_token or "-",
        kept.refresh_token or "-",
        CLIENT_SECRET,
    ]
    for secret in secrets:
        assert secret not in spans_text(exporter)
        assert all(secret.encode() not in body for body in loopback.requests)


async def test_a_refused_refresh_is_a_miss_and_forgets_the_token(
    loopback: LoopbackServer, oauth: OAuthServer, caplog: pytest.LogCaptureFixture
) -> None:
    strategy, store = oauth.strategy(name="cal-dead"), hs.MemoryTokenStore()
    await sign_in(oauth, strategy, store, "app")
    dead = await expire(store, "cal-dead", refresh_token="rt-revoked")
    got: list[str] = []
    loopback.script(tool_calls(("calendar", {"day": "today"})), text("Sign in, please."))
    with caplog.at_level(logging.WARNING, logger="helix_stream.auth"):
        result = hs.stream_text(
            **loopback.llm(),
            prompt="my day",
            tools=[calendar_tool(strategy, got)],
            token_store=store,
        )
        assert await result.text() == "Sign in, please."
    error = (await result.steps())[0].tool_results[0].error or ""
    assert "AuthorizationRequiredError" in error and got == []
    assert await store.get("cal-dead", "app") is None
    assert "core.auth.refresh_failed" in caplog.text
    assert dead.token not in caplog.text and "rt-revoked" not in caplog.text
