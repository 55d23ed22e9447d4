"""GenAI metrics and the span attributes of issue 16: usage with cache and reasoning tokens,
response id, server address and port, system instructions, attempts, who answered.

Each test passes its own ``MeterProvider`` (an ``InMemoryMetricReader``) and ``TracerProvider``
(an ``InMemorySpanExporter``); the global providers are never touched. Model calls are real
HTTP through litellm to the loopback server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models._litellm import acompletion, litellm_module
from helix_stream.models._parse import StepParser, map_finish_reason
from helix_stream.models._retry import RetryPolicy, open_stream
from helix_stream.steps import StepResult
from helix_stream.telemetry import NOOP_RECORDER, Recorder, TelemetrySettings, recorder_for
from tests.loopback import LoopbackServer, error, text, tool_calls

DETAILS = {
    "prompt_tokens_details": {"cached_tokens": 6},
    "completion_tokens_details": {"reasoning_tokens": 2},
}


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def settings(self, **kw: Any) -> TelemetrySettings:
        return TelemetrySettings(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **kw
        )

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def span(self, prefix: str) -> ReadableSpan:
        (found,) = [s for s in self.finished() if s.name.startswith(prefix)]
        return found

    def points(self, name: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        out: list[HistogramDataPoint] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        out.extend(p for p in metric.data.data_points)  # type: ignore[misc]
        return out


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Telemetry(exporter, reader, tracer_provider, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


class Query(BaseModel):
    q: str


async def lookup(input: Query, ctx: hs.ToolContext) -> str:
    return "found"


LOOKUP = hs.tool(name="lookup", description="Look up", input_schema=Query, execute=lookup)


def port_of(server: LoopbackServer) -> int:
    return int(server.api_base.rsplit(":", 1)[1].split("/")[0])


async def test_token_usage_and_duration_metrics_per_model_call(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    loopback.script(
        tool_calls(("lookup", {"q": "x"}), usage=(10, 4), usage_details=DETAILS),
        text("done", usage=(30, 5)),
    )
    result = hs.stream_text(
        **loopback.llm(), prompt="x", tools=[LOOKUP], telemetry=telemetry.settings()
    )
    assert await result.text() == "done"

    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "loopback",
        "gen_ai.response.model": "loopback",
        "server.address": "127.0.0.1",
        "server.port": port_of(loopback),
    }
    tokens = {
        p.attributes["gen_ai.token.type"]: p for p in telemetry.points("gen_ai.client.token.usage")
    }  # type: ignore[index]
    assert set(tokens) == {"input", "output"}
    assert (tokens["input"].count, tokens["input"].sum) == (2, 40)
    assert (tokens["output"].count, tokens["output"].sum) == (2, 9)
    assert dict(tokens["input"].attributes or {}) == {**common, "gen_ai.token.type": "input"}
    assert tokens["input"].explicit_bounds[:3] == (1.0, 4.0, 16.0)

    durations = {
        p.attributes["gen_ai.operation.name"]: p  # type: ignore[index]
        for p in telemetry.points("gen_ai.client.operation.duration")
    }
    assert durations["chat"].count == 2 and dict(durations["chat"].attributes or {}) == common
    assert durations["invoke_agent"].count == 1
    assert durations["invoke_agent"].sum >= durations["chat"].sum > 0
    assert "error.type" not in (durations["invoke_agent"].attributes or {})
    (first_chunk,) = telemetry.points("gen_ai.client.operation.time_to_first_chunk")
    assert first_chunk.count == 2


async def test_a_failed_call_is_measured_with_its_error_type(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    loopback.script(error(400, "bad"))
    result = hs.stream_text(
        **loopback.llm(), prompt="x", max_retries=0, telemetry=telemetry.settings()
    )
    with pytest.raises(hs.errors.ModelBadRequestError):
        await result.text()
    points = telemetry.points("gen_ai.client.operation.duration")
    kinds = {(p.attributes or {}).get("gen_ai.operation.name"): p for p in points}
    for name in ("chat", "invoke_agent"):
        assert (kinds[name].attributes or {})[
            "error.type"
        ] == "helix_stream.errors.ModelBadRequestError"
    assert telemetry.points("gen_ai.client.token.usage") == []


async def test_a_step_whose_retries_all_failed_counts_its_attempts(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    loopback.script(*[error(503, "down", headers={"retry-after-ms": "1"})] * 3)
    result = hs.stream_text(
        **loopback.llm(), prompt="x", max_retries=1, telemetry=telemetry.settings()
    )
    with pytest.raises(hs.errors.ModelUnavailableError):
        await result.text()
    chat = telemetry.span("chat")
    assert attrs(chat)["helix.attempts"] == 2
    events = [dict(e.attributes or {}) for e in chat.events if e.name == "helix.attempt_failed"]
    assert [(e["helix.attempt"], e["helix.attempt.will_retry"]) for e in events] == [
        (1, True),
        (2, False),
    ]
    assert len(loopback.requests) == 2


async def test_metrics_alone_need_no_tracer_provider(loopback: LoopbackServer) -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    settings = TelemetrySettings(meter_provider=provider)
    assert recorder_for(settings, operation="stream_text") is not NOOP_RECORDER
    loopback.script(text("hi"))
    assert await hs.stream_text(**loopback.llm(), prompt="x", telemetry=settings).text() == "hi"
    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert names >= {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"}
    provider.shutdown()


async def test_usage_attributes_carry_cache_and_reasoning_tokens(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    loopback.script(
        tool_calls(("lookup", {"q": "x"}), usage=(10, 4), usage_details=DETAILS),
        text("done", usage=(30, 5), usage_details={"prompt_tokens_details": {"cached_tokens": 20}}),
    )
    result = hs.stream_text(
        **loopback.llm(), prompt="x", tools=[LOOKUP], telemetry=telemetry.settings()
    )
    await result.text()
    step0, step1 = [s for s in telemetry.finished() if s.name.startswith("chat")]
    assert attrs(step0)["gen_ai.usage.cache_read.input_tokens"] == 6
    assert attrs(step0)["gen_ai.usage.reasoning.output_tokens"] == 2
    assert attrs(step1)["gen_ai.usage.cache_read.input_tokens"] == 20
    assert "gen_ai.usage.reasoning.output_tokens" not in attrs(step1)  # none reported
    call = attrs(telemetry.span("stream_text"))
    assert call["gen_ai.usage.cache_read.input_tokens"] == 26
    assert call["gen_ai.usage.reasoning.output_tokens"] == 2
    assert call["gen_ai.usage.input_tokens"] == 40
    assert call["gen_ai.operation.name"] == "invoke_agent"
    assert call["helix.operation.name"] == "stream_text"


async def test_anthropic_cache_creation_tokens_reach_the_span(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    loopback.script(
        text(
            "cached",
            usage=(100, 8),
            usage_details={"cache_read_input_tokens": 50, "cache_creation_input_tokens": 25},
        )
    )
    result = hs.generate_text(
        model="anthropic/claude-3-5-sonnet-20241022",
        api_base=loopback.anthropic_base,
        api_key="sk-ant-loopback",
        prompt="x",
        telemetry=telemetry.settings(),
    )
    out = await result
    assert out.usage.cache_creation_input_tokens == 25
    chat = attrs(telemetry.span("chat"))
    assert chat["gen_ai.provider.name"] == "anthropic"
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 50
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 25
    assert chat["gen_ai.usage.input_tokens"] == 175


async def test_the_system_prompt_is_recorded_as_system_instructions_not_as_a_message(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    loopback.script(text("ok"))
    result = hs.stream_text(
        **loopback.llm(), system="Be brief.", prompt="Hi", telemetry=telemetry.settings()
    )
    await result.text()
    assert loopback.bodies()[0]["messages"][0] == {"role": "system", "content": "Be brief."}
    chat = attrs(telemetry.span("chat"))
    assert json.loads(chat["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert json.loads(chat["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Hi"}]}
    ]
    assert chat["server.address"] == "127.0.0.1" and chat["server.port"] == port_of(loopback)
    assert chat["gen_ai.response.id"] == "chatcmpl-loopback"
    call = attrs(telemetry.span("stream_text"))
    assert json.loads(call["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert "Be brief." not in call["gen_ai.input.messages"]


def test_the_call_span_records_system_instructions_the_loop_passes(telemetry: Telemetry) -> None:
    rec = recorder_for(telemetry.settings(), operation="generate_text")
    rec.call_started(
        model="openai/x",
        runtime_context={},
        messages=[{"role": "user", "content": "Hi"}],
        system="SYSTEM-TEXT",
    )
    rec.call_finished(steps=[], finish_reason="stop", usage=hs.Usage(), text="")
    call = attrs(telemetry.span("generate_text"))
    assert json.loads(call["gen_ai.system_instructions"]) == [
        {"type": "text", "content": "SYSTEM-TEXT"}
    ]
    assert "SYSTEM-TEXT" not in call["gen_ai.input.messages"]
    assert call["gen_ai.operation.name"] == "invoke_agent"


# -- what the loop reports once it opens steps with open_stream --------------------------------


async def run_step(rec: Recorder, send: Any, params: dict[str, Any]) -> StepParser:
    """One step as the loop runs it with the retry policy (the call sites the loop needs)."""
    rec.step_started(
        step_number=0,
        model=params["model"],
        params=params,
        runtime_context={},
        context_rows=[],
        skipped=[],
    )
    first, stream = await open_stream(
        send, params, RetryPolicy(initial_delay=0.001), on_attempt=rec.attempt_failed
    )
    parser = StepParser(0)
    rec.first_chunk(0.01)
    if first is not None:
        parser.feed(first)
    async for raw in stream:
        parser.feed(raw)
    _, calls = parser.finish()
    step = StepResult(
        step_number=0,
        text="".join(parser.text),
        reasoning="",
        tool_calls=calls,
        tool_results=[],
        finish_reason=map_finish_reason(parser.finish_reason),
        usage=parser.usage,
        response_model=parser.response_model,
    )
    rec.step_finished(step=step, response=parser.response)
    rec.call_finished(
        steps=[step], finish_reason=step.finish_reason, usage=step.usage, text=step.text
    )
    return parser


async def test_each_failed_attempt_is_an_event_and_the_answer_names_its_response(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    key = "sk-SECRET-in-a-429-3c2"
    loopback.script(
        error(429, f"slow down, {key}", headers={"retry-after-ms": "5"}),
        reply_with_id("chatcmpl-answer-1"),
    )
    rec = recorder_for(telemetry.settings(), operation="stream_text")
    params = {
        **loopback.llm(),
        "api_key": key,
        "messages": [{"role": "user", "content": "x"}],
        "stream": True,
    }
    rec.call_started(model=params["model"], runtime_context={}, messages=params["messages"])

    async def send(p: dict[str, Any]) -> Any:
        rec.request_sent(p)
        return await acompletion(**p)

    parser = await run_step(rec, send, params)
    assert "".join(parser.text) == "answer"
    chat = telemetry.span("chat")
    a = attrs(chat)
    assert a["gen_ai.response.id"] == "chatcmpl-answer-1"
    assert a["helix.attempts"] == 2
    (event,) = [e for e in chat.events if e.name == "helix.attempt_failed"]
    ev = dict(event.attributes or {})
    assert ev["helix.attempt"] == 1 and ev["helix.attempt.will_retry"] is True
    assert ev["error.type"] == "helix_stream.errors.ModelRateLimitError"
    assert ev["helix.error.code"] == "model_rate_limited"
    assert 0.005 <= ev["helix.attempt.retry_delay_s"] <= 0.0056
    assert key not in ev["exception.message"] and "[REDACTED]" in ev["exception.message"]


def reply_with_id(response_id: str) -> Any:
    reply = text("answer")
    reply.response_id = response_id
    return reply


async def test_a_router_fallback_is_recorded_as_the_deployment_that_answered(
    telemetry: Telemetry,
) -> None:
    a, b = LoopbackServer().start(), LoopbackServer().start()
    try:
        a.script(error(429, "slow down"))
        b.script(text("from b"))
        router = litellm_module().Router(
            model_list=[
                {
                    "model_name": "fast",
                    "litellm_params": {
                        "model": "openai/model-a",
                        "api_base": a.api_base,
                        "api_key": "sk-a",
                    },
                    "model_info": {"id": "dep-a"},
                },
                {
                    "model_name": "slow",
                    "litellm_params": {
                        "model": "openai/model-b",
                        "api_base": b.api_base,
                        "api_key": "sk-b",
                    },
                    "model_info": {"id": "dep-b"},
                },
            ],
            fallbacks=[{"fast": ["slow"]}],
        )
        rec = recorder_for(telemetry.settings(), operation="stream_text")
        params = {"model": "fast", "messages": [{"role": "user", "content": "x"}], "stream": True}
        rec.call_started(model="fast", runtime_context={}, messages=params["messages"])

        async def send(p: dict[str, Any]) -> Any:
            return await acompletion(router=router, **p)

        await run_step(rec, send, params)
        chat = attrs(telemetry.span("chat"))
        assert chat["gen_ai.request.model"] == "fast"
        assert chat["gen_ai.response.model"] == "model-b"
        assert chat["helix.response.deployment_id"] == "dep-b"
        assert (chat["server.address"], chat["server.port"]) == ("127.0.0.1", port_of(b))
        assert chat["helix.attempts"] == 1  # the fallback is the Router's, inside one attempt
        assert attrs(telemetry.span("stream_text"))["gen_ai.response.model"] == "model-b"
        (tokens, *_) = telemetry.points("gen_ai.client.token.usage")
        assert (tokens.attributes or {})["server.port"] == port_of(b)
        assert (tokens.attributes or {})["gen_ai.response.model"] == "model-b"
    finally:
        a.stop()
        b.stop()
