"""Benchmark: what telemetry costs a run (off vs on, same run, interleaved in one process).

Two workloads, each timed with ``telemetry=None`` and with ``TelemetrySettings`` on an SDK
``TracerProvider`` (a ``SimpleSpanProcessor`` into an in-memory exporter, emptied after each
run, so that export costs nothing but span building is real):

- **long stream**: a litellm ``CustomLLM`` registered here streams 2,000 text chunks (one
  step, no I/O), so per-chunk costs would show;
- **tool run**: the embedded demo model ``helix/demo`` calls a tool and answers (two steps,
  one tool span), so per-step and per-tool costs show, with the include-filters and input
  and output recording on.

Rounds run the cases in turn (off, on, off, on, ...) so that drift hits both alike; the
script prints the median time of each and the on/off ratio.

Run it from the repository root::

    .venv/bin/python bench/bench_telemetry.py [rounds]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from _common import interleaved, register_bench_provider

CHUNKS = 2_000
ROUNDS = 30


async def main(rounds: int) -> int:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from helix_stream.loop import stream_text
    from helix_stream.telemetry import TelemetrySettings
    from helix_stream.tools import tool

    model = register_bench_provider(CHUNKS)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    @tool
    def get_weather(city: str) -> dict[str, Any]:
        """Weather in a city."""
        return {"city": city, "temp": 21}

    runtime = {"request_id": "req_abc", "tenant_id": "tenant_123", "user_id": "user_123"}
    on_long = TelemetrySettings(
        tracer_provider=provider, function_id="bench", include_runtime_context={"request_id": True}
    )
    # A tools filter may only name the call's tools (it raises otherwise): one per workload.
    on_tools = TelemetrySettings(
        tracer_provider=provider,
        function_id="bench",
        include_runtime_context={"request_id": True},
        include_tools_context={"get_weather": {"units": True}},
    )
    spans_seen: dict[str, int] = {}

    def long_stream(telemetry: TelemetrySettings | None) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            n = 0
            result = stream_text(
                model=model, prompt="go", runtime_context=runtime, telemetry=telemetry
            )
            async for chunk in result:
                if chunk.type == "text-delta":
                    n += 1
            assert n == CHUNKS, n
            spans_seen["long stream"] = len(exporter.get_finished_spans())
            exporter.clear()

        return run

    def tool_run(telemetry: TelemetrySettings | None) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            result = stream_text(
                model="helix/demo",
                prompt="What is the weather in Paris?",
                tools=[get_weather],
                runtime_context=runtime,
                telemetry=telemetry,
            )
            steps = await result.steps()
            assert len(steps) == 2, steps
            spans_seen["tool run"] = len(exporter.get_finished_spans())
            exporter.clear()

        return run

    print(f"telemetry off vs on, {rounds} interleaved rounds (median per run)")
    workloads = (("long stream", long_stream, on_long), ("tool run", tool_run, on_tools))
    for workload, make, on in workloads:
        times = await interleaved({"off": make(None), "on": make(on)}, rounds)
        off, with_spans = statistics.median(times["off"]), statistics.median(times["on"])
        detail = f"{CHUNKS} chunks, 1 step" if workload == "long stream" else "2 steps, 1 tool"
        print(
            f"{workload:<12} ({detail}, {spans_seen.get(workload, 0)} spans when on): "
            f"off {off * 1000:8.2f} ms   on {with_spans * 1000:8.2f} ms   "
            f"ratio {with_spans / off:.3f}"
        )
    provider.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)))
