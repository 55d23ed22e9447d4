"""Tools with ``auth=`` in plain ``stream_text``, against the loopback model server (real HTTP
through litellm): the per-step cache, the token store across steps, eviction, the interactive
miss, and tokens kept out of the model's requests and the spans (checked on the bytes)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.auth import TokenAuth
from tests.auth.oauth_server import CLIENT_SECRET, OAuthServer
from tests.loopback import LoopbackServer, text, tool_calls

TOKEN = "tok-CRM-SECRET-5b7e0a"


class Query(BaseModel):
    q: str


def tracing() -> tuple[hs.TelemetrySettings, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return hs.TelemetrySettings(tracer_provider=provider, record_outputs=True), exporter


def spans_text(exporter: InMemorySpanExporter) -> str:
    return "\n".join(span.to_json() for span in exporter.get_finished_spans())


def tool_spans(exporter: InMemorySpanExporter) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith("execute_tool")]


def counting_auth(name: str, calls: list[hs.TokenRequest], **token: Any) -> TokenAuth:
    async def get_token(request: hs.TokenRequest) -> hs.Token:
        calls.append(request)
        await asyncio.sleep(0.01)  # the other calls of the step ask while this one is away
        return hs.Token(token=TOKEN, **token)

    return hs.token_auth(get_token, name=name)


def crm_tools(auth: Any, seen: list[str]) -> list[hs.Tool]:
    async def search(input: Query, ctx: hs.ToolContext) -> dict[str, Any]:
        token = await ctx.get_token()
        seen.append(f"search:{token.token}")
        return {"results": [input.q], "authorized": token.token == TOKEN}

    async def fetch(input: Query, ctx: hs.ToolContext) -> str:
        token = await ctx.get_token()
        seen.append(f"fetch:{token.token}")
        return f"fetched {input.q}"

    return [
        hs.tool(name="search", input_schema=Query, execute=search, auth=auth),
        hs.tool(name="fetch", input_schema=Query, execute=fetch, auth=auth),
    ]


async def test_three_calls_of_two_tools_sharing_a_strategy_ask_it_once_in_a_step(
    loopback: LoopbackServer,
) -> None:
    calls: list[hs.TokenRequest] = []
    seen: list[str] = []
    tools = crm_tools(counting_auth("crm-once", calls), seen)
    settings, exporter = tracing()
    loopback.script(
        tool_calls(("search", {"q": "a"}), ("fetch", {"q": "b"}), ("search", {"q": "c"})),
        text("Done."),
    )
    result = hs.stream_text(
        **loopback.llm(),
        prompt="look",
        tools=tools,
        telemetry=settings,
        token_store=hs.MemoryTokenStore(),
    )
    assert await result.text() == "Done."
    assert len(calls) == 1
    assert calls[0].session is None and calls[0].principal is None
    assert calls[0].tool_name in ("search", "fetch")
    assert sorted(seen) == [f"fetch:{TOKEN}", f"search:{TOKEN}", f"search:{TOKEN}"]
    sources = sorted(s.attributes["helix.auth.token_source"] for s in tool_spans(exporter))
    assert sources == ["step", "step", "strategy"]
    assert all(s.attributes["helix.auth.strategy"] == "crm-once" for s in tool_spans(exporter))
    # The token went to the tools only: not to the model, not to a span.
    assert all(TOKEN.encode() not in body for body in loopback.requests)
    assert TOKEN not in spans_text(exporter)


async def test_a_later_step_takes_the_token_from_the_store(loopback: LoopbackServer) -> None:
    calls: list[hs.TokenRequest] = []
    seen: list[str] = []
    tools = crm_tools(counting_auth("crm-steps", calls), seen)
    store = hs.MemoryTokenStore()
    settings, exporter = tracing()
    loopback.script(
        tool_calls(("search", {"q": "a"})), tool_calls(("fetch", {"q": "b"})), text("Done.")
    )
    result = hs.stream_text(
        **loopback.llm(), prompt="look", tools=tools, token_store=store, telemetry=settings
    )
    assert await result.text() == "Done."
    assert len(calls) == 1
    stored = await store.get("crm-steps", "app")
    assert stored is not None and stored.token == TOKEN
    sources = [s.attributes["helix.auth.token_source"] for s in tool_spans(exporter)]
    assert sources == ["strategy", "store"]
    assert [s.attributes["helix.auth.cached"] for s in tool_spans(exporter)] == [False, True]


async def test_an_expired_token_is_not_kept(loopback: LoopbackServer) -> None:
    calls: list[hs.TokenRequest] = []
    seen: list[str] = []
    tools = crm_tools(counting_auth("crm-expired", calls, expires_at=1.0), seen)
    store = hs.MemoryTokenStore()
    loopback.script(
        tool_calls(("search", {"q": "a"})), tool_calls(("fetch", {"q": "b"})), text("Done.")
    )
    result = hs.stream_text(**loopback.llm(), prompt="look", tools=tools, token_store=store)
    assert await result.text() == "Done."
    assert len(calls) == 2  # asked again in the second step
    assert await store.get("crm-expired", "app") is None


async def test_reject_token_evicts_it_and_the_next_step_asks_again(
    loopback: LoopbackServer,
) -> None:
    calls: list[hs.TokenRequest] = []
    store = hs.MemoryTokenStore()
    auth = counting_auth("crm-reject", calls)
    outcomes: list[str] = []

    async def search(input: Query, ctx: hs.ToolContext) -> str:
        await ctx.get_token()
        if not outcomes:
            outcomes.append("rejected")
            ctx.reject_token()  # the service said 401
        outcomes.append("ok")
        return "found"

    tool = hs.tool(name="search", input_schema=Query, execute=search, auth=auth)
    loopback.script(
        tool_calls(("search", {"q": "a"})),
        tool_calls(("search", {"q": "b"})),
        text("Done."),
    )
    result = hs.stream_text(**loopback.llm(), prompt="look", tools=[tool], token_store=store)
    assert await result.text() == "Done."
    steps = await result.steps()
    first = steps[0].tool_results[0]
    assert first.status == "error" and "TokenRejectedError" in (first.error or "")
    assert steps[1].tool_results[0].status == "output"
    assert outcomes == ["rejected", "ok"]
    assert len(calls) == 2  # the rejected token was not handed out again


async def test_raising_token_rejected_evicts_the_token_too(loopback: LoopbackServer) -> None:
    calls: list[hs.TokenRequest] = []
    store = hs.MemoryTokenStore()

    async def search(input: Query, ctx: hs.ToolContext) -> str:
        await ctx.get_token()
        raise hs.TokenRejectedError("the CRM answered 401")

    tool = hs.tool(
        name="search", input_schema=Query, execute=search, auth=counting_auth("crm-raise", calls)
    )
    loopback.script(tool_calls(("search", {"q": "a"})), text("Done."))
    result = hs.stream_text(**loopback.llm(), prompt="look", tools=[tool], token_store=store)
    assert await result.text() == "Done."
    assert len(calls) == 1
    assert await store.get("crm-raise", "app") is None


async def test_a_tool_that_quotes_its_token_in_an_error_is_redacted(
    loopback: LoopbackServer,
) -> None:
    async def search(input: Query, ctx: hs.ToolContext) -> str:
        token = await ctx.get_token()
        raise RuntimeError(f"CRM refused Authorization: Bearer {token.token}")

    auth = counting_auth("crm-quote", [])
    tool = hs.tool(name="search", input_schema=Query, execute=search, auth=auth)
    settings, exporter = tracing()
    loopback.script(tool_calls(("search", {"q": "a"})), text("It failed."))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="look",
        tools=[tool],
        telemetry=settings,
        token_store=hs.MemoryTokenStore(),
    )
    assert await result.text() == "It failed."
    second = loopback.requests[1]
    assert b"Bearer [REDACTED]" in second
    assert TOKEN.encode() not in second
    assert TOKEN not in spans_text(exporter)
    assert "[REDACTED]" in spans_text(exporter)


async def test_a_tool_without_auth_gets_a_typed_error_from_each_accessor(
    loopback: LoopbackServer,
) -> None:
    errors: dict[str, hs.HelixError] = {}

    async def plain(input: Query, ctx: hs.ToolContext) -> str:
        for name, use in (
            ("get_token", ctx.get_token),
            ("require_auth", ctx.require_auth),
            ("reject_token", ctx.reject_token),
        ):
            try:
                out = use()
                if asyncio.iscoroutine(out):
                    await out
            except hs.InvalidRequestError as exc:
                errors[name] = exc
        return "checked"

    tool = hs.tool(name="plain", input_schema=Query, execute=plain)
    loopback.script(tool_calls(("plain", {"q": "a"})), text("Done."))
    assert await hs.stream_text(**loopback.llm(), prompt="x", tools=[tool]).text() == "Done."
    assert sorted(errors) == ["get_token", "reject_token", "require_auth"]
    assert str(errors["get_token"]).startswith(
        "tool 'plain' declares no auth=: ctx.get_token() needs one"
    )


async def test_an_interactive_miss_outside_a_session_is_the_tools_error(
    loopback: LoopbackServer, oauth: OAuthServer
) -> None:
    ran: list[str] = []

    async def calendar(input: Query, ctx: hs.ToolContext) -> str:
        await ctx.get_token()
        ran.append("after the token")
        return "events"

    tool = hs.tool(
        name="calendar", input_schema=Query, execute=calendar, auth=oauth.strategy(name="cal")
    )
    settings, exporter = tracing()
    loopback.script(tool_calls(("calendar", {"q": "today"})), text("Please sign in."))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="my day",
        tools=[tool],
        telemetry=settings,
        token_store=hs.MemoryTokenStore(),
    )
    assert await result.text() == "Please sign in."
    error = (await result.steps())[0].tool_results[0].error or ""
    assert error.startswith("Tool 'calendar' failed: AuthorizationRequiredError: ")
    assert "needs the user to sign in to 'cal'" in error
    assert "needs a session" in error
    assert ran == []
    # Nothing of the sign-in's secrets went anywhere: no token endpoint call, no secret.
    assert oauth.token_requests == []
    assert all(CLIENT_SECRET.encode() not in body for body in loopback.requests)
    tool_message = json.loads(loopback.requests[1])["messages"][-1]
    assert (
        tool_message["role"] == "tool" and "AuthorizationRequiredError" in tool_message["content"]
    )
    (span,) = tool_spans(exporter)
    assert span.attributes["helix.error.code"] == "authorization_required"
    assert CLIENT_SECRET not in spans_text(exporter)


async def test_an_interactive_token_the_store_holds_is_used_outside_a_session(
    loopback: LoopbackServer, oauth: OAuthServer
) -> None:
    store = hs.MemoryTokenStore()
    await store.put("cal-held", "app", hs.Token(token=TOKEN, principal_type="user"))
    got: list[str] = []

    async def calendar(input: Query, ctx: hs.ToolContext) -> str:
        got.append((await ctx.get_token()).token)
        return "3 events"

    tool = hs.tool(
        name="calendar", input_schema=Query, execute=calendar, auth=oauth.strategy(name="cal-held")
    )
    loopback.script(tool_calls(("calendar", {"q": "today"})), text("3 events."))
    result = hs.stream_text(**loopback.llm(), prompt="my day", tools=[tool], token_store=store)
    assert await result.text() == "3 events."
    assert got == [TOKEN]


async def test_two_strategies_of_one_name_are_refused_before_any_request(
    loopback: LoopbackServer,
) -> None:
    first = hs.token_auth(lambda r: hs.Token(token="a"), name="same")
    second = hs.token_auth(lambda r: hs.Token(token="b"), name="same")
    tools = [
        hs.tool(name="one", input_schema=Query, execute=lambda i: "1", auth=first),
        hs.tool(name="two", input_schema=Query, execute=lambda i: "2", auth=second),
    ]
    try:
        hs.stream_text(**loopback.llm(), prompt="x", tools=tools)
    except hs.InvalidRequestError as exc:
        assert "two different auth strategies are named 'same'" in str(exc)
    else:
        raise AssertionError("expected InvalidRequestError")
    assert loopback.requests == []
