"""The cache ledger (``StepResult.cache``) and cache lifetimes on the bytes a loopback
Anthropic server receives.

Each of the four prefix breaks is named by the ledger on the turn that makes it (and by
``assert_prefix_stable`` on the bodies the server got); the ledger's cache counts are the
provider's; Anthropic's ``cache_miss_reason`` comes through from a server that sends it, and
its request is never sent to a provider that would not take it; ``hs.PromptCache(ttl=...)``
puts each breakpoint's lifetime on the wire, one-hour markers before five-minute ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models import _cache_book
from helix_stream.models._cache_book import DIAGNOSTICS_BETA
from helix_stream.testing import assert_prefix_stable
from tests.providers._wire import Say
from tests.providers.anthropic_server import AnthropicServer
from tests.providers.conftest import Provider

SYSTEM = "You are a weather bot."


class City(BaseModel):
    city: str


def weather(description: str = "The weather in a city") -> hs.Tool:
    return hs.tool(
        name="weather", description=description, input_schema=City, execute=lambda i: "Sunny"
    )


def clock() -> hs.Tool:
    return hs.tool(name="clock", description="The time", input_schema=City, execute=lambda i: "9")


def agent(server: AnthropicServer, **kw: Any) -> hs.Agent:
    llm = server.llm()
    options: dict[str, Any] = {
        "name": "bot",
        "model": llm["model"],
        "system": SYSTEM,
        "tools": [weather(), clock()],
        "settings": {"api_base": llm["api_base"], "api_key": llm["api_key"]},
    }
    return hs.Agent(**{**options, **kw})


def _edit_first_message(step: Any) -> dict[str, Any]:
    # An app that rewrites an old message (a timestamp added to the first user message).
    messages = [dict(m) for m in step.messages]
    messages[0]["content"] = "[Monday] " + str(messages[0]["content"])
    return {"messages": messages}


# The break, the agent of the second turn, the segment the ledger names (the OpenAI-format
# request: the system prompt is message 0) and the one the Anthropic body shows.
BREAKS: dict[str, tuple[Callable[[AnthropicServer], hs.Agent], str, str]] = {
    "changed-tool-description": (
        lambda s: agent(s, tools=[weather("The weather, in Celsius"), clock()]),
        "tools",
        "tools",
    ),
    "edited-system-prompt": (
        lambda s: agent(s, system=SYSTEM + " Today is Monday."),
        "system",
        "system",
    ),
    "tools-reordered": (lambda s: agent(s, tools=[clock(), weather()]), "tools", "tools"),
    "edited-old-message": (
        lambda s: agent(s, prepare_step=_edit_first_message),
        "message 1",
        "message 0",
    ),
}


async def two_turns(server: AnthropicServer, second: hs.Agent, **kw: Any) -> list[hs.StepResult]:
    executor = hs.Executor(store=hs.MemoryStore())
    server.script(Say(text="Hi!"), Say(text="Sunny in Oslo."))
    first = await executor.run(agent(server, **kw), "s1", "Hello").steps()
    second_steps = await executor.run(second, "s1", "Weather in Oslo?").steps()
    return [*first, *second_steps]


@pytest.mark.parametrize("name", list(BREAKS))
async def test_the_ledger_names_the_segment_each_break_changed(
    anthropic: AnthropicServer, name: str
) -> None:
    make, segment, wire_segment = BREAKS[name]
    first, second = await two_turns(anthropic, make(anthropic))
    assert first.cache is not None and second.cache is not None
    assert (first.cache.compared, first.cache.diverged_at) == (False, None)
    assert (second.cache.compared, second.cache.diverged_at) == (True, segment)
    # The same rule on the bytes the server got, through the test helper.
    with pytest.raises(AssertionError, match=f"request 1 .* at '{wire_segment}'"):
        assert_prefix_stable(anthropic.requests)


async def test_a_stable_session_diverges_nowhere_and_reads_the_cache(
    anthropic: AnthropicServer,
) -> None:
    first, second = await two_turns(anthropic, agent(anthropic))
    assert second.cache is not None
    assert (second.cache.compared, second.cache.diverged_at) == (True, None)
    assert_prefix_stable(anthropic.requests)
    # The counts are the provider's (the simulated cache's), as it reported them.
    for step, usage in zip((first, second), anthropic.usage, strict=True):
        assert step.cache is not None
        assert step.cache.read_tokens == usage.cache_read_input_tokens
        assert step.cache.write_tokens == usage.cache_creation_input_tokens
    assert second.cache.read_tokens > 0
    assert [p.segment for p in second.cache.breakpoints] == [
        "tools",
        "system",
        "message 1",
        "message 3",
    ]
    assert {p.ttl for p in second.cache.breakpoints} == {"5m"}


async def test_two_sessions_and_two_stores_never_compare_with_each_other(
    anthropic: AnthropicServer,
) -> None:
    anthropic.script(Say(text="a"), Say(text="b"), Say(text="c"))
    executor = hs.Executor(store=hs.MemoryStore())
    await executor.run(agent(anthropic), "s1", "Hello").text()
    other = await executor.run(agent(anthropic, system="Other."), "s2", "Hello").steps()
    fresh = await hs.Executor(store=hs.MemoryStore()).run(agent(anthropic), "s1", "Hi").steps()
    assert other[0].cache is not None and fresh[0].cache is not None
    assert other[0].cache.compared is False
    assert fresh[0].cache.compared is False


async def test_anthropics_miss_reason_comes_through_on_the_step_event_and_span(
    anthropic: AnthropicServer,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(exporter))
    miss = {"cache_miss_reason": {"type": "system_changed", "cache_missed_input_tokens": 1234}}
    anthropic.diagnostics = [None, miss]
    ended: list[hs.ModelCallEndEvent] = []
    cache = hs.PromptCache(diagnostics=True)  # asked at an api_base: the loopback server
    second = agent(
        anthropic,
        system=SYSTEM + " Today is Monday.",
        prompt_cache=cache,
        on_model_call_end=ended.append,
        telemetry=hs.TelemetrySettings(tracer_provider=tracer),
    )
    first, last = await two_turns(anthropic, second, prompt_cache=cache)
    bodies = anthropic.bodies()
    assert bodies[0]["diagnostics"] == {"previous_message_id": None}
    assert bodies[1]["diagnostics"] == {"previous_message_id": "msg_1"}  # the first answer's id
    for request in anthropic.requests:
        assert DIAGNOSTICS_BETA in request.headers["anthropic-beta"].split(",")
    assert first.cache is not None and first.cache.miss_reason is None
    assert last.cache is not None
    assert (last.cache.miss_reason, last.cache.missed_tokens) == ("system_changed", 1234)
    assert last.cache.diverged_at == "system"
    assert [e.cache for e in ended] == [last.cache]
    (span,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    attrs = dict(span.attributes or {})
    assert attrs["helix.prompt_cache.miss_reason"] == "system_changed"
    assert attrs["helix.prompt_cache.missed_tokens"] == 1234
    assert attrs["helix.prompt_cache.diverged_at"] == "system"
    assert attrs["helix.prompt_cache.compared"] is True
    assert attrs["helix.prompt_cache.read_tokens"] == last.cache.read_tokens
    assert list(attrs["helix.prompt_cache.breakpoints"]) == [  # type: ignore[arg-type]
        f"{p.segment}:{p.ttl}" for p in last.cache.breakpoints
    ]
    tracer.shutdown()


async def test_by_default_diagnostics_are_asked_only_at_anthropics_own_address(
    anthropic: AnthropicServer,
) -> None:
    await two_turns(anthropic, agent(anthropic))
    for request in anthropic.requests:
        assert "diagnostics" not in request.json()
        assert "anthropic-beta" not in request.headers


@pytest.mark.parametrize("provider", ["openai", "bedrock", "gemini", "mistral"], indirect=True)
async def test_no_other_provider_is_ever_sent_the_diagnostics_request(provider: Provider) -> None:
    provider.server.script(Say(text="a"), Say(text="b"))
    for prompt in ("Hello", "Again"):
        await hs.generate_text(
            **provider.llm, prompt=prompt, prompt_cache=hs.PromptCache(ttl="1h", diagnostics=True)
        )
    for request in provider.server.requests:
        assert b"diagnostics" not in request.body
        assert DIAGNOSTICS_BETA not in str(request.headers)
        assert b'"1h"' not in request.body  # one-hour markers are Anthropic's only


def markers(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The body's cache markers in Anthropic's cache order: tools, system, messages."""
    found = [t["cache_control"] for t in body.get("tools") or [] if "cache_control" in t]
    found += [b["cache_control"] for b in body.get("system") or [] if "cache_control" in b]
    for message in body["messages"]:
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if "cache_control" in block:
                found.append(block["cache_control"])
    return found


def lifetimes(body: dict[str, Any]) -> list[str]:
    ttls = [m.get("ttl", "5m") for m in markers(body)]
    # Anthropic's rule: a longer-lived marker never comes after a shorter-lived one.
    assert ttls == sorted(ttls, key=lambda t: t != "1h"), ttls
    return ttls


async def test_ttl_one_hour_marks_every_breakpoint_for_an_hour(anthropic: AnthropicServer) -> None:
    _first, second = await two_turns(
        anthropic,
        agent(anthropic, prompt_cache=hs.PromptCache(ttl="1h")),
        prompt_cache=hs.PromptCache(ttl="1h"),
    )
    for body in anthropic.bodies():
        assert set(lifetimes(body)) == {"1h"}
        assert {"type": "ephemeral", "ttl": "1h"} in markers(body)
    assert second.cache is not None
    assert {p.ttl for p in second.cache.breakpoints} == {"1h"}
    assert second.cache.diverged_at is None  # a lifetime is not part of the prefix


@pytest.mark.parametrize("cache", ["auto", hs.PromptCache(ttl="5m"), hs.PromptCache()])
async def test_five_minutes_is_the_marker_as_it_always_was(
    anthropic: AnthropicServer, cache: Any
) -> None:
    await two_turns(anthropic, agent(anthropic, prompt_cache=cache), prompt_cache=cache)
    for body in anthropic.bodies():
        assert markers(body) and all(m == {"type": "ephemeral"} for m in markers(body))


async def test_auto_gives_an_hour_before_a_wait_for_an_approval(anthropic: AnthropicServer) -> None:
    refund = hs.tool(
        name="refund",
        description="Refund",
        input_schema=City,
        execute=lambda i: "ok",
        needs_approval=True,
    )
    cache = hs.PromptCache(ttl="auto")
    waits = agent(anthropic, tools=[weather(), refund], prompt_cache=cache)
    _first, second = await two_turns(anthropic, waits, prompt_cache=cache)
    bodies = anthropic.bodies()
    # The first turn offers no tool that can park: five minutes; the second one does, and
    # the breakpoint it ends on is read back after the wait: an hour (and, by Anthropic's
    # order rule, every breakpoint before it).
    assert set(lifetimes(bodies[0])) == {"5m"}
    assert set(lifetimes(bodies[1])) == {"1h"}
    assert second.cache is not None and {p.ttl for p in second.cache.breakpoints} == {"1h"}
    assert second.cache.diverged_at == "tools"


async def test_auto_gives_the_head_an_hour_once_turns_come_more_than_five_minutes_apart(
    anthropic: AnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = hs.PromptCache(ttl="auto")
    monkeypatch.setattr(_cache_book, "SLOW_GAP", 0.0)  # any gap between turns is "long"
    _first, second = await two_turns(
        anthropic, agent(anthropic, prompt_cache=cache), prompt_cache=cache
    )
    bodies = anthropic.bodies()
    assert set(lifetimes(bodies[0])) == {"5m"}  # no turn before it
    assert lifetimes(bodies[1]) == ["1h", "1h", "5m", "5m"]  # tools, system; then messages
    assert second.cache is not None
    assert [(p.segment, p.ttl) for p in second.cache.breakpoints] == [
        ("tools", "1h"),
        ("system", "1h"),
        ("message 1", "5m"),
        ("message 3", "5m"),
    ]


def test_a_bad_ttl_is_refused_with_what_to_pass() -> None:
    with pytest.raises(hs.InvalidRequestError, match='"5m", "1h" or "auto"'):
        hs.PromptCache(ttl="10m")  # type: ignore[arg-type]
    with pytest.raises(hs.InvalidRequestError, match="PromptCache"):
        hs.Agent(name="a", model="helix/demo", prompt_cache="1h")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "provider", ["openai", "anthropic", "bedrock", "gemini", "mistral"], indirect=True
)
async def test_every_family_gets_a_ledger_that_names_the_break(provider: Provider) -> None:
    provider.server.script(Say(text="Hi!"), Say(text="Sunny."))
    llm = dict(provider.llm)
    settings = {k: llm.pop(k) for k in ("api_base", "api_key")}
    base: dict[str, Any] = {"name": "bot", "model": llm["model"], "settings": settings}
    executor = hs.Executor(store=hs.MemoryStore())
    await executor.run(hs.Agent(**base, system=SYSTEM), "s1", "Hello").text()
    (step,) = await executor.run(hs.Agent(**base, system=SYSTEM + " Monday."), "s1", "Hi").steps()
    assert step.cache is not None
    assert (step.cache.compared, step.cache.diverged_at) == (True, "system")
    with pytest.raises(AssertionError, match="at 'system'"):
        assert_prefix_stable(provider.server.requests)
