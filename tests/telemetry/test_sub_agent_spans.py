"""A sub-agent's spans nest under the parent's tool span (``agent.as_tool``), with and without
its progress streamed: one trace, the child's run a child of the call that started it."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.telemetry import TelemetrySettings
from tests.loopback import LoopbackServer, text, tool_calls


class Q(BaseModel):
    q: str


def _found(input: Q) -> str:
    return f"found {input.q}"


@pytest.mark.parametrize("progress", [True, False], ids=["stream_progress", "plain"])
async def test_the_child_run_is_a_child_of_the_parent_s_tool_span(
    loopback: LoopbackServer, progress: bool
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry = TelemetrySettings(tracer_provider=provider)
    common = {
        "model": "openai/loopback",
        "settings": {"api_base": loopback.api_base, "api_key": "k"},
        "max_retries": 0,
        "telemetry": telemetry,
    }
    child = hs.Agent(
        name="researcher", tools=[hs.tool(name="inner", input_schema=Q, execute=_found)], **common
    )
    parent = hs.Agent(name="lead", tools=[child.as_tool(stream_progress=progress)], **common)
    loopback.script(
        tool_calls(("researcher", {"prompt": "look"}), call_ids=["call_child"]),
        tool_calls(("inner", {"q": "y"}), call_ids=["call_inner"]),
        text("It is y."),
        text("Done."),
    )
    executor = hs.Executor(store=hs.MemoryStore())
    assert await executor.run(parent, f"spans-{progress}", "go").text() == "Done."
    provider.shutdown()
    spans = exporter.get_finished_spans()
    by_id = {span.context.span_id: span for span in spans}

    def parent_of(span: ReadableSpan) -> ReadableSpan | None:
        return by_id.get(span.parent.span_id) if span.parent is not None else None

    [root] = [s for s in spans if s.parent is None]
    [call] = [s for s in spans if s.name == "execute_tool researcher"]
    [inner] = [s for s in spans if s.name == "execute_tool inner"]
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}  # one trace
    # The child's run span hangs under the parent's tool span, the child's own spans under it:
    # lead > execute_tool researcher > invoke_agent researcher > execute_tool inner, chat x2.
    [child_root] = [s for s in spans if s.name == "invoke_agent researcher"]
    assert root.name == "invoke_agent lead"
    assert parent_of(call) is root
    assert parent_of(child_root) is call
    assert parent_of(inner) is child_root
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert sorted(parent_of(s) is child_root for s in chats) == [False, False, True, True]
