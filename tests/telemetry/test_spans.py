"""Telemetry through the public API: GenAI spans, include-filters, errors, content switches.

Every run uses its own ``TracerProvider`` with an ``InMemorySpanExporter`` passed in through
``TelemetrySettings(tracer_provider=...)``; the global provider is never touched.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.chunks import TextDelta
from helix_stream.errors import InvalidRequestError
from helix_stream.loop import generate_text, stream_text
from helix_stream.telemetry import NOOP_RECORDER, TelemetrySettings, recorder_for
from helix_stream.tools import tool
from tests._store import create_session
from tests.loopback import LoopbackServer, error, text, tool_calls

API_KEY = "SECRET-api-key-9f3"
TENANT_ID = "SECRET-tenant-4c1"
USER_ID = "SECRET-user-7e2"
SECRETS = (API_KEY, TENANT_ID, USER_ID)


class LookupInput(BaseModel):
    customer_id: str


class LookupContext(BaseModel):
    api_key: str
    region: str


class CityInput(BaseModel):
    city: str


def customer_lookup(seen: list[str] | None = None) -> hs.Tool:
    async def run(input: LookupInput, ctx: hs.ToolContext) -> dict[str, Any]:
        if seen is not None:
            seen.append(ctx.context.api_key)  # the secret really is in the run
        logging.getLogger("app.lookup").debug(
            "looked up %s in %s", input.customer_id, ctx.context.region
        )
        return {"customer_id": input.customer_id, "eligible": True}

    return tool(
        name="customer_lookup",
        description="Look up customer account details",
        input_schema=LookupInput,
        context_schema=LookupContext,
        execute=run,
    )


def lookup_contexts() -> dict[str, Any]:
    return {
        "runtime_context": {"request_id": "req_abc", "tenant_id": TENANT_ID, "user_id": USER_ID},
        "tools_context": {"customer_lookup": {"api_key": API_KEY, "region": "us"}},
    }


@dataclass
class Traces:
    provider: TracerProvider
    exporter: InMemorySpanExporter

    def settings(self, **kw: Any) -> TelemetrySettings:
        return TelemetrySettings(tracer_provider=self.provider, **kw)

    def spans(self) -> list[ReadableSpan]:
        # By end time: a chat span is exported when its step ends (it carries the step's time)
        # but ends when its model call did.
        return sorted(self.exporter.get_finished_spans(), key=lambda s: s.end_time or 0)

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans() if s.name.startswith(prefix)]

    def call(self) -> ReadableSpan:
        """The call span: the one root of the run's tree."""
        (root,) = [s for s in self.spans() if s.parent is None]
        return root

    def one(self, prefix: str) -> ReadableSpan:
        found = self.named(prefix)
        assert len(found) == 1, [s.name for s in self.spans()]
        return found[0]


@pytest.fixture
def traces() -> Iterator[Traces]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "helix-tests"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Traces(provider, exporter)
    provider.shutdown()


def everything(span: ReadableSpan) -> str:
    """All the text a span carries: name, attributes, events, links, resource, status."""
    parts: list[str] = [span.name, span.status.description or "", span.instrumentation_scope.name]
    for key, value in (span.attributes or {}).items():
        parts += [key, str(value)]
    for event in span.events:
        parts.append(event.name)
        for key, value in (event.attributes or {}).items():
            parts += [key, str(value)]
    for link in span.links:
        for key, value in (link.attributes or {}).items():
            parts += [key, str(value)]
    for key, value in span.resource.attributes.items():
        parts += [key, str(value)]
    return "\n".join(parts)


def context_keys(spans: list[ReadableSpan]) -> set[str]:
    return {
        key
        for span in spans
        for key in (span.attributes or {})
        if "runtime_context" in key or "tool_context" in key
    }


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


# -- the span tree ------------------------------------------------------------------------


async def test_two_step_tool_run_is_a_call_span_with_chat_and_tool_children(
    loopback: LoopbackServer, traces: Traces
) -> None:
    loopback.script(tool_calls(("customer_lookup", {"customer_id": "cust_123"})), text("eligible"))
    result = stream_text(
        **loopback.llm(),
        prompt="Is cust_123 eligible?",
        tools=[customer_lookup()],
        temperature=0.2,
        max_tokens=50,
        **lookup_contexts(),
        telemetry=traces.settings(),
    )
    assert await result.text() == "eligible"

    spans = traces.spans()
    assert [s.name for s in spans] == [
        "chat loopback",
        "execute_tool customer_lookup",
        "chat loopback",
        "stream_text",
    ]
    call = traces.one("stream_text")
    step0, tool_span, step1 = spans[:3]
    assert call.parent is None
    for child in (step0, tool_span, step1):
        assert child.parent is not None and child.parent.span_id == call.context.span_id
        assert child.context.trace_id == call.context.trace_id
    assert (call.kind, step0.kind, tool_span.kind) == (
        SpanKind.INTERNAL,
        SpanKind.CLIENT,
        SpanKind.INTERNAL,
    )

    a0 = attrs(step0)
    expected = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "loopback",
        "gen_ai.response.model": "loopback",
        "gen_ai.response.finish_reasons": ("tool_call",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 50,
        "helix.step_number": 0,
        "helix.tool_calls": 1,
    }
    assert {k: a0.get(k) for k in expected} == expected
    assert a0["gen_ai.response.time_to_first_chunk"] == a0["helix.time_to_first_chunk"] >= 0
    assert json.loads(a0["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Is cust_123 eligible?"}]}
    ]
    assert json.loads(a0["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_0_customer_lookup",
                    "name": "customer_lookup",
                    "arguments": {"customer_id": "cust_123"},
                }
            ],
            "finish_reason": "tool_call",
        }
    ]
    assert attrs(step1)["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(step1)["helix.step_number"] == 1
    assert json.loads(attrs(step1)["gen_ai.input.messages"])[-1] == {
        "role": "tool",
        "parts": [
            {
                "type": "tool_call_response",
                "id": "call_0_customer_lookup",
                "response": '{"customer_id": "cust_123", "eligible": true}',
            }
        ],
    }

    t = attrs(tool_span)
    expected = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "customer_lookup",
        "gen_ai.tool.call.id": "call_0_customer_lookup",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Look up customer account details",
        "helix.step_number": 0,
    }
    assert {k: t.get(k) for k in expected} == expected
    assert json.loads(t["gen_ai.tool.call.arguments"]) == {"customer_id": "cust_123"}
    assert json.loads(t["gen_ai.tool.call.result"]) == {"customer_id": "cust_123", "eligible": True}

    c = attrs(call)
    assert c["helix.operation.name"] == "stream_text"
    assert (c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"], c["helix.steps"]) == (
        20,
        10,
        2,
    )
    assert c["gen_ai.response.finish_reasons"] == ("stop",)
    assert json.loads(c["gen_ai.output.messages"])[0]["parts"] == [
        {"type": "text", "content": "eligible"}
    ]
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)


async def test_demo_model_spans_name_the_helix_provider_and_run_in_process(traces: Traces) -> None:
    @tool
    def get_weather(city: str) -> dict[str, Any]:
        """Weather in a city."""
        return {"city": city, "temp": 21}

    out = await generate_text(
        model="helix/demo",
        prompt="What is the weather in Paris?",
        tools=[get_weather],
        telemetry=traces.settings(),
    )
    assert out.text.startswith("Done:")
    chats = traces.named("chat ")
    assert [s.name for s in chats] == ["chat demo", "chat demo"]
    assert {attrs(s)["gen_ai.provider.name"] for s in chats} == {"helix"}
    assert {s.kind for s in chats} == {SpanKind.INTERNAL}
    assert (
        attrs(traces.one("execute_tool get_weather"))["gen_ai.tool.call.arguments"]
        == '{"city":"Paris"}'
    )


async def test_generate_text_call_span_is_named_generate_text(
    loopback: LoopbackServer, traces: Traces
) -> None:
    loopback.script(text("ok"))
    await generate_text(**loopback.llm(), prompt="x", telemetry=traces.settings())
    assert traces.call().name == "generate_text"
    assert attrs(traces.call())["helix.operation.name"] == "generate_text"


async def test_a_tool_span_is_current_inside_the_tool(
    loopback: LoopbackServer, traces: Traces
) -> None:
    inside: list[int] = []

    async def run(input: CityInput) -> str:
        inside.append(trace.get_current_span().get_span_context().span_id)
        return "sunny"

    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("ok"))
    weather = tool(name="get_weather", input_schema=CityInput, execute=run)
    await stream_text(
        **loopback.llm(), prompt="x", tools=[weather], telemetry=traces.settings()
    ).text()
    assert inside == [traces.one("execute_tool").context.span_id]


async def test_function_id_and_metadata_are_on_every_span(
    loopback: LoopbackServer, traces: Traces
) -> None:
    loopback.script(tool_calls(("customer_lookup", {"customer_id": "c1"})), text("ok"))
    settings = traces.settings(
        function_id="support-check", metadata={"team": "billing", "tier": [1, 2]}
    )
    await stream_text(
        **loopback.llm(),
        prompt="x",
        tools=[customer_lookup()],
        **lookup_contexts(),
        telemetry=settings,
    ).text()
    assert len(traces.spans()) == 4
    for span in traces.spans():
        assert attrs(span)["helix.function_id"] == "support-check"
        assert attrs(span)["helix.metadata.team"] == "billing"
        assert attrs(span)["helix.metadata.tier"] == "[1,2]"


async def test_invoke_agent_call_span_is_named_for_the_agent(traces: Traces) -> None:
    recorder = recorder_for(
        traces.settings(),
        operation="invoke_agent",
        agent_name="support-bot",
        conversation_id="sess-1",
    )
    recorder.call_started(model="helix/demo", runtime_context={}, messages=[])
    recorder.call_finished(steps=[], finish_reason="stop", usage=hs.Usage(), text="")
    span = traces.one("invoke_agent")
    assert span.name == "invoke_agent support-bot"
    assert attrs(span)["gen_ai.operation.name"] == "invoke_agent"
    assert attrs(span)["gen_ai.agent.name"] == "support-bot"
    assert attrs(span)["gen_ai.conversation.id"] == "sess-1"


# -- include filters --------------------------------------------------------


async def test_customer_lookup_example_sends_request_id_and_region_and_nothing_else(
    loopback: LoopbackServer, traces: Traces, caplog: pytest.LogCaptureFixture
) -> None:
    from helix_stream.models._litellm import litellm_module

    litellm_module()  # so that litellm's loggers exist and are captured at DEBUG too
    for name in ["", *logging.root.manager.loggerDict]:
        caplog.set_level(logging.DEBUG, logger=name)
    seen: list[str] = []
    loopback.script(tool_calls(("customer_lookup", {"customer_id": "cust_123"})), text("eligible"))
    settings = traces.settings(
        include_runtime_context={"request_id": True},
        include_tools_context={"customer_lookup": {"region": True}},
    )
    result = stream_text(
        **loopback.llm(),
        prompt="Check whether customer cust_123 is eligible for priority support.",
        tools={"customer_lookup": customer_lookup(seen)},
        **lookup_contexts(),
        telemetry=settings,
    )
    assert await result.text() == "eligible"
    assert seen == [API_KEY]

    spans = traces.spans()
    assert context_keys(spans) == {"helix.runtime_context.request_id", "helix.tool_context.region"}
    for span in traces.named("chat ") + traces.named("stream_text"):
        assert attrs(span)["helix.runtime_context.request_id"] == "req_abc"
    assert attrs(traces.one("execute_tool"))["helix.tool_context.region"] == "us"
    dump = "\n".join(everything(s) for s in spans)
    for secret in (*SECRETS, "sk-loopback", loopback.api_base):
        assert secret not in dump
    # The capture works (the tool's own debug record is there), and holds no secret.
    assert "looked up cust_123 in us" in caplog.text
    logged = caplog.text + "\n".join(str(r.args) for r in caplog.records)
    for secret in SECRETS:
        assert secret not in logged


async def test_omitted_filters_send_no_context_at_all(
    loopback: LoopbackServer, traces: Traces
) -> None:
    seen: list[str] = []
    loopback.script(tool_calls(("customer_lookup", {"customer_id": "c1"})), text("ok"))
    result = stream_text(
        **loopback.llm(),
        prompt="x",
        tools=[customer_lookup(seen)],
        **lookup_contexts(),
        telemetry=traces.settings(),
    )
    await result.text()
    assert seen == [API_KEY]
    assert len(traces.spans()) == 4
    assert context_keys(traces.spans()) == set()
    dump = "\n".join(everything(s) for s in traces.spans())
    for value in (*SECRETS, "req_abc"):
        assert value not in dump


async def test_a_property_marked_false_is_not_sent(
    loopback: LoopbackServer, traces: Traces
) -> None:
    loopback.script(tool_calls(("customer_lookup", {"customer_id": "c1"})), text("ok"))
    settings = traces.settings(
        include_runtime_context={"request_id": True, "tenant_id": False},
        include_tools_context={"customer_lookup": {"region": True, "api_key": False}},
    )
    await stream_text(
        **loopback.llm(),
        prompt="x",
        tools=[customer_lookup()],
        **lookup_contexts(),
        telemetry=settings,
    ).text()
    assert context_keys(traces.spans()) == {
        "helix.runtime_context.request_id",
        "helix.tool_context.region",
    }
    dump = "\n".join(everything(s) for s in traces.spans())
    assert TENANT_ID not in dump and API_KEY not in dump


async def test_a_non_scalar_property_is_sent_whole_as_json(
    loopback: LoopbackServer, traces: Traces
) -> None:
    class Limits(BaseModel):
        daily: int
        burst: list[int]

    class RichContext(BaseModel):
        api_key: str
        limits: Limits

    async def run(input: CityInput, ctx: hs.ToolContext) -> str:
        return "ok"

    rich = tool(name="rich", input_schema=CityInput, context_schema=RichContext, execute=run)
    loopback.script(tool_calls(("rich", {"city": "Rome"})), text("ok"))
    settings = traces.settings(
        include_runtime_context={"flags": True},
        include_tools_context={"rich": {"limits": True}},
    )
    await stream_text(
        **loopback.llm(),
        prompt="x",
        tools=[rich],
        runtime_context={"flags": {"beta": True, "cohorts": ["a", "b"]}, "tenant_id": TENANT_ID},
        tools_context={"rich": {"api_key": API_KEY, "limits": {"daily": 100, "burst": [5, 10]}}},
        telemetry=settings,
    ).text()
    call = attrs(traces.one("stream_text"))
    assert json.loads(call["helix.runtime_context.flags"]) == {"beta": True, "cohorts": ["a", "b"]}
    assert json.loads(attrs(traces.one("execute_tool"))["helix.tool_context.limits"]) == {
        "daily": 100,
        "burst": [5, 10],
    }
    dump = "\n".join(everything(s) for s in traces.spans())
    assert API_KEY not in dump and TENANT_ID not in dump


@pytest.mark.parametrize("enabled", [True, False], ids=["enabled", "disabled"])
async def test_an_unknown_tool_in_the_filter_raises_before_anything_runs(
    loopback: LoopbackServer, traces: Traces, enabled: bool
) -> None:
    settings = traces.settings(
        enabled=enabled, include_tools_context={"custmer_lookup": {"region": True}}
    )
    with pytest.raises(InvalidRequestError, match="custmer_lookup") as info:
        stream_text(
            **loopback.llm(),
            prompt="x",
            tools=[customer_lookup()],
            **lookup_contexts(),
            telemetry=settings,
        )
    assert isinstance(info.value, hs.HelixError) and info.value.http_status == 400
    assert "customer_lookup" in info.value.message  # says which tools the call has
    await asyncio.sleep(0.05)
    assert loopback.requests == []
    assert traces.spans() == []


def test_filters_of_the_wrong_shape_are_refused_when_the_settings_are_built() -> None:
    with pytest.raises(InvalidRequestError, match="request_id"):
        TelemetrySettings(include_runtime_context={"request_id": "yes"})  # type: ignore[dict-item]
    with pytest.raises(InvalidRequestError, match="include_tools_context"):
        TelemetrySettings(include_tools_context={"customer_lookup": ["region"]})  # type: ignore[dict-item]


async def test_changing_the_filter_dict_afterwards_does_not_widen_what_is_sent(
    loopback: LoopbackServer, traces: Traces
) -> None:
    include = {"request_id": True}
    settings = traces.settings(include_runtime_context=include)
    include["tenant_id"] = True
    loopback.script(text("ok"))
    await stream_text(
        **loopback.llm(),
        prompt="x",
        **lookup_contexts(),
        tools=[customer_lookup()],
        telemetry=settings,
    ).text()
    assert context_keys(traces.spans()) == {"helix.runtime_context.request_id"}


# -- on and off ---------------------------------------------------------------------------


async def test_disabled_telemetry_creates_no_spans(
    loopback: LoopbackServer, traces: Traces
) -> None:
    assert recorder_for(None, operation="stream_text") is NOOP_RECORDER
    assert recorder_for(traces.settings(enabled=False), operation="stream_text") is NOOP_RECORDER
    assert recorder_for(traces.settings(), operation="stream_text") is not NOOP_RECORDER
    loopback.script(text("ok"))
    await stream_text(**loopback.llm(), prompt="x", telemetry=traces.settings(enabled=False)).text()
    assert loopback.requests and traces.spans() == []


def test_telemetry_on_without_any_tracer_provider_records_nothing() -> None:
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        pytest.skip("a global tracer provider was configured by something else")
    # OpenTelemetry's global default is a no-op: building attributes for it would be waste.
    assert recorder_for(TelemetrySettings(), operation="stream_text") is NOOP_RECORDER
    # The filter is still checked.
    with pytest.raises(InvalidRequestError):
        recorder_for(TelemetrySettings(include_tools_context={"nope": {}}), operation="stream_text")


def test_importing_helix_stream_does_not_import_opentelemetry() -> None:
    code = "import sys, helix_stream, helix_stream.telemetry; print('opentelemetry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- errors and cancellation ----------------------------------------------------------------


async def test_a_model_error_is_recorded_on_the_call_and_step_spans(
    loopback: LoopbackServer, traces: Traces
) -> None:
    # The provider's message quotes the call's api_key: it must not reach a span that way.
    loopback.script(error(500, "scripted failure for sk-loopback"))
    with pytest.raises(hs.ModelError):
        await generate_text(
            **loopback.llm(), prompt="x", max_retries=0, telemetry=traces.settings()
        )
    step, call = traces.one("chat loopback"), traces.call()
    for span in (step, call):
        assert span.status.status_code is StatusCode.ERROR
        assert "scripted failure for [REDACTED]" in (span.status.description or "")
        assert attrs(span)["error.type"].startswith("helix_stream.errors.Model")
        assert attrs(span)["helix.error.code"].startswith("model_")
        (event,) = [e for e in span.events if e.name == "exception"]
        assert "scripted failure for [REDACTED]" in event.attributes["exception.message"]
        assert "Traceback" in event.attributes["exception.stacktrace"]
    assert "sk-loopback" not in everything(step) + everything(call)


async def test_a_tool_that_raises_is_recorded_on_its_tool_span(
    loopback: LoopbackServer, traces: Traces
) -> None:
    async def run(input: LookupInput, ctx: hs.ToolContext) -> str:
        raise ValueError(f"lookup refused key {ctx.context.api_key}")

    failing = tool(
        name="customer_lookup", input_schema=LookupInput, context_schema=LookupContext, execute=run
    )
    loopback.script(tool_calls(("customer_lookup", {"customer_id": "c1"})), text("sorry"))
    result = stream_text(
        **loopback.llm(),
        prompt="x",
        tools=[failing],
        **lookup_contexts(),
        telemetry=traces.settings(),
    )
    assert await result.text() == "sorry"
    span = traces.one("execute_tool")
    assert span.status.status_code is StatusCode.ERROR
    assert attrs(span)["error.type"] == "ValueError"
    (event,) = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.type"] == "ValueError"
    # The tool's own text, with its context value redacted: in the spans, and in the tool
    # message the model is sent next.
    assert event.attributes["exception.message"] == "lookup refused key [REDACTED]"
    assert API_KEY not in loopback.bodies()[1]["messages"][-1]["content"]
    assert API_KEY not in "\n".join(everything(s) for s in traces.spans())
    assert traces.one("stream_text").status.status_code is StatusCode.UNSET


async def test_a_closed_run_ends_its_spans_as_aborted_without_a_stack(
    loopback: LoopbackServer, traces: Traces
) -> None:
    loopback.script(text("a b c d e f", pieces=6, hang=True))
    result = stream_text(**loopback.llm(), prompt="x", telemetry=traces.settings())
    async for chunk in result:
        if isinstance(chunk, TextDelta):
            break
    await result.aclose()
    step, call = traces.one("chat loopback"), traces.one("stream_text")
    for span in (step, call):
        assert attrs(span)["helix.aborted"] is True
        assert span.status.status_code is not StatusCode.ERROR
        assert [e.name for e in span.events if e.name == "exception"] == []


async def test_a_cancelled_tool_ends_its_span_as_aborted(
    loopback: LoopbackServer, traces: Traces
) -> None:
    started = asyncio.Event()

    async def forever(input: CityInput) -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    loopback.script(tool_calls(("slow", {"city": "Paris"})))
    slow = tool(name="slow", input_schema=CityInput, execute=forever)
    task = asyncio.ensure_future(
        stream_text(**loopback.llm(), prompt="x", tools=[slow], telemetry=traces.settings()).text()
    )
    await asyncio.wait_for(started.wait(), timeout=10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    tool_span, call = traces.one("execute_tool slow"), traces.one("stream_text")
    for span in (tool_span, call):
        assert attrs(span)["helix.aborted"] is True
        assert span.status.status_code is not StatusCode.ERROR
        assert not [e for e in span.events if e.name == "exception"]


# -- content switches and context rows ------------------------------------------------------


async def test_record_inputs_and_outputs_false_keep_messages_and_results_out(
    loopback: LoopbackServer, traces: Traces
) -> None:
    loopback.script(
        tool_calls(("customer_lookup", {"customer_id": "cust-PRIVATE-ID"})), text("PRIVATE-ANSWER")
    )
    settings = traces.settings(record_inputs=False, record_outputs=False)
    result = stream_text(
        **loopback.llm(),
        system="PRIVATE-SYSTEM",
        prompt="PRIVATE-PROMPT",
        tools=[customer_lookup()],
        **lookup_contexts(),
        telemetry=settings,
    )
    assert await result.text() == "PRIVATE-ANSWER"
    spans = traces.spans()
    assert len(spans) == 4
    content_keys = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "helix.context.contents",
    }
    assert not content_keys & {k for s in spans for k in attrs(s)}
    dump = "\n".join(everything(s) for s in spans)
    for private in ("PRIVATE-SYSTEM", "PRIVATE-PROMPT", "PRIVATE-ANSWER", "cust-PRIVATE-ID"):
        assert private not in dump
    # Usage and the rest are still there.
    assert attrs(traces.one("stream_text"))["gen_ai.usage.output_tokens"] == 10


async def run_with_rows(loopback: LoopbackServer, settings: Any, **agent_options: Any) -> None:
    """A session turn whose first call gets one row of each source: app, hook, memory."""
    executor = hs.Executor()
    await create_session(executor.store, "rows", agent_name="rows")
    await executor.add_context("rows", [hs.instruction("SECRET-ROW-TEXT")])
    options: dict[str, Any] = {
        "step_context": lambda req: (
            {"items": [hs.notice("SECRET-NOTICE-TEXT")], "cursor": 1}
            if req.cursor is None
            else None
        ),
        "memory": lambda sid, text: [{"id": "m1", "content": "SECRET-MEMORY-TEXT"}],
        **agent_options,
    }
    llm = loopback.llm()
    agent = hs.Agent(
        name="rows",
        model=llm.pop("model"),
        settings=llm,
        telemetry=settings,
        **options,
    )
    await executor.run(agent, "rows", "x").consume()


@pytest.mark.parametrize("record_inputs", [False, True], ids=["inputs-off", "inputs-on"])
async def test_context_rows_appear_as_kinds_sources_and_counts(
    loopback: LoopbackServer, traces: Traces, record_inputs: bool
) -> None:
    loopback.script(text("ok"))
    await run_with_rows(loopback, traces.settings(record_inputs=record_inputs))
    step = attrs(traces.one("chat "))
    assert step["helix.context.rows"] == 3
    assert step["helix.context.kinds"] == ("instruction", "notice", "memory")
    assert step["helix.context.sources"] == ("app", "hook", "memory")
    dump = "\n".join(everything(s) for s in traces.spans())
    texts = ("SECRET-ROW-TEXT", "SECRET-NOTICE-TEXT", "SECRET-MEMORY-TEXT")
    if record_inputs:
        contents = json.loads(step["helix.context.contents"])
        assert [
            {k: v for k, v in c.items() if k not in ("origin", "cursor")} for c in contents
        ] == [
            {"kind": "instruction", "source": "app", "content": "SECRET-ROW-TEXT"},
            {"kind": "notice", "source": "hook", "content": "SECRET-NOTICE-TEXT"},
            {
                "kind": "memory",
                "source": "memory",
                "memories": [{"id": "m1", "content": "SECRET-MEMORY-TEXT"}],
            },
        ]
    else:
        assert "helix.context.contents" not in step
        assert not [t for t in texts if t in dump]


async def test_context_skipped_becomes_a_span_event(
    loopback: LoopbackServer, traces: Traces
) -> None:
    async def slow_hook(req: hs.StepContextRequest) -> None:
        await asyncio.sleep(5)

    loopback.script(text("ok"))
    await run_with_rows(
        loopback,
        traces.settings(),
        step_context=slow_hook,
        step_context_limits=hs.StepContextLimits(timeout=0.05),
    )
    (event,) = [e for e in traces.one("chat ").events if e.name == "context_skipped"]
    assert dict(event.attributes or {}) == {
        "helix.context.reason": "timeout",
        "helix.context.source": "hook",
    }


# -- agent turns --------------------------------------------------------------------------


async def test_an_agent_turn_is_an_invoke_agent_span_with_committed_rows(traces: Traces) -> None:
    agent = hs.Agent(name="helper", model="helix/demo")
    executor = hs.Executor(store=hs.MemoryStore())
    settings = traces.settings(record_inputs=False, record_outputs=False)
    await executor.run(agent, "s1", "hi", telemetry=settings).text()  # creates the session
    traces.exporter.clear()
    await executor.add_context("s1", [hs.instruction("Answer in French, SECRET-INSTRUCTION")])
    text_out = await executor.run(agent, "s1", "hello", telemetry=settings).text()
    assert "SECRET-INSTRUCTION" in text_out  # the demo model did get the row
    call = traces.call()
    assert call.name.startswith("invoke_agent ")
    assert attrs(call)["gen_ai.operation.name"] == "invoke_agent"
    step = attrs(traces.one("chat demo"))
    assert step["helix.context.rows"] == 1
    assert (step["helix.context.kinds"], step["helix.context.sources"]) == (
        ("instruction",),
        ("app",),
    )
    assert "SECRET-INSTRUCTION" not in "\n".join(everything(s) for s in traces.spans())


async def test_an_agent_turn_span_names_the_agent_and_the_session(traces: Traces) -> None:
    agent = hs.Agent(name="helper", model="helix/demo")
    executor = hs.Executor(store=hs.MemoryStore())
    await executor.run(agent, "s1", "hello", telemetry=traces.settings()).text()
    assert traces.call().name == "invoke_agent helper"
    assert attrs(traces.call())["gen_ai.agent.name"] == "helper"
    assert attrs(traces.call())["gen_ai.conversation.id"] == "s1"


async def test_a_credential_added_by_model_middleware_is_redacted_too(
    loopback: LoopbackServer, traces: Traces
) -> None:
    secret = "sk-MIDDLEWARE-SECRET-4411"
    model = hs.wrap_model("openai/loopback", [hs.default_settings(api_key=secret)])
    loopback.script(error(400, f"bad key {secret}"))
    result = stream_text(
        model=model,
        api_base=loopback.api_base,
        prompt="x",
        telemetry=traces.settings(),
        max_retries=0,
    )
    await result.consume()
    assert result.error is not None
    assert all(secret not in everything(s) for s in traces.spans())
