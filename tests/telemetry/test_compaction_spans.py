"""A compaction's summarizer call on the span of the step whose model call it preceded."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import helix_stream as hs
from helix_stream.context._summary import DEFAULT_SUMMARY_INSTRUCTIONS
from helix_stream.telemetry import TelemetrySettings
from helix_stream.testing import FunctionModel

MARK = DEFAULT_SUMMARY_INSTRUCTIONS.split(".")[0]


async def test_the_step_span_carries_the_summarizer_call_apart() -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if MARK in json.dumps(request["messages"][-1]):
            return {"text": "SUMMARY", "usage": {"input_tokens": 900, "cached_input_tokens": 850}}
        return {"text": "A long answer. " * 40, "usage": {"input_tokens": 11}}

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = hs.Agent(
        name="traced",
        model=FunctionModel(reply),
        compaction=hs.Compaction(trigger_tokens=900, keep_last_turns=1),
        telemetry=TelemetrySettings(tracer_provider=provider),
    )
    executor = hs.Executor(store=hs.MemoryStore())
    for turn in range(6):
        await executor.run(agent, "s", f"Question {turn}. " + "and more " * 20).consume()
    provider.shutdown()
    steps = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
    compacted = [a for a in steps if "helix.compaction.model" in a]
    assert compacted, "no step span names a compaction"
    for attrs in compacted:
        assert attrs["helix.compaction.input_tokens"] == 900
        assert attrs["helix.compaction.cached_input_tokens"] == 850
        assert attrs["helix.compaction.failed"] is False
        assert attrs["gen_ai.usage.input_tokens"] == 11  # the step's own call, apart
    plain = [a for a in steps if "gen_ai.usage.input_tokens" in a and a not in compacted]
    assert plain and all("helix.compaction.model" not in a for a in plain)
