"""One definition per figure: the time to first chunk is the time to the first content-bearing
chunk in the span attributes, the GenAI metric and the lifecycle figure alike; the ``chat``
span's ``helix.step_time`` is the step's own; every ``gen_ai.*`` name the spans carry is one
the OpenTelemetry semantic conventions package spells."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes

import helix_stream as hs
from tests.loopback import LoopbackServer, Reply
from tests.telemetry.test_metrics import Telemetry, attrs, telemetry

__all__ = ["telemetry"]  # the fixture, shared with test_metrics

pytestmark = pytest.mark.usefixtures("warm_loopback")

LATE = 0.4  # seconds the first text waits after the role and empty chunks


def _slow_first_text() -> tuple[Reply, threading.Timer]:
    """A role chunk and two empty deltas at once, then the first text ``LATE`` s later."""
    gate = threading.Event()
    deltas: list[dict[str, Any]] = [{"content": ""}, {}, {"content": "late "}, {"content": "text"}]
    return Reply(deltas=deltas, gate=gate, gate_at=2), threading.Timer(LATE, gate.set)


async def test_time_to_first_chunk_is_the_first_content_everywhere(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    reply, timer = _slow_first_text()
    loopback.script(reply)
    ends: list[Any] = []
    timer.start()
    result = hs.stream_text(
        **loopback.llm(),
        prompt="go",
        telemetry=telemetry.settings(),
        on_model_call_end=ends.append,
    )
    steps = await result.steps()
    timer.join()

    lifecycle = ends[0].performance.time_to_first_chunk
    span = attrs(telemetry.span("chat"))
    (point,) = telemetry.points("gen_ai.client.operation.time_to_first_chunk")
    figures = [
        lifecycle,
        span["gen_ai.response.time_to_first_chunk"],
        span["helix.time_to_first_chunk"],
        point.sum,
    ]
    assert point.count == 1
    # Content came LATE s after the request (less the time litellm took to send it): the role
    # and empty chunks, sent at once, are not the first chunk.
    assert lifecycle is not None and lifecycle > LATE / 2
    assert max(figures) - min(figures) < 0.001, figures
    assert steps[0].performance is not None
    assert steps[0].performance.model is not None
    assert steps[0].performance.model.time_to_first_chunk == lifecycle


async def test_the_chat_span_carries_the_step_time(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    loopback.script(Reply(deltas=[{"content": "hi"}], delay=0.05))
    result = hs.stream_text(**loopback.llm(), prompt="go", telemetry=telemetry.settings())
    (step,) = await result.steps()
    assert step.performance is not None
    span = attrs(telemetry.span("chat"))
    assert span["helix.step_time"] == round(step.performance.step_time, 6)
    assert span["helix.step_time"] >= span["helix.response_time"] > 0


async def test_every_gen_ai_name_is_a_semconv_name(
    loopback: LoopbackServer, telemetry: Telemetry
) -> None:
    known = {
        value
        for name, value in vars(gen_ai_attributes).items()
        if name.startswith("GEN_AI_") and isinstance(value, str)
    }
    loopback.script(Reply(deltas=[{"content": "hi"}]))
    result = hs.stream_text(**loopback.llm(), prompt="go", telemetry=telemetry.settings())
    await result.steps()
    emitted = {
        key for span in telemetry.finished() for key in attrs(span) if key.startswith("gen_ai.")
    }
    assert "gen_ai.response.time_to_first_chunk" in emitted
    assert emitted <= known, emitted - known
