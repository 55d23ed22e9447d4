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
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

# Standalone script: make the checkout importable without installing it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

CHUNKS = 2_000
ROUNDS = 30
MODEL = "benchtel/long"


def register_long_stream() -> None:
    """Register ``benchtel/long``: CHUNKS one-word text deltas, then usage, no I/O."""
    from helix_stream.models._litellm import litellm_module

    litellm = litellm_module()

    class LongStream(litellm.CustomLLM):  # type: ignore[misc,name-defined]
        async def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
            for i in range(CHUNKS):
                # Distinct words: litellm refuses a stream that repeats one chunk many times.
                yield {
                    "text": f"w{i} ",
                    "tool_use": None,
                    "is_finished": False,
                    "finish_reason": "",
                    "usage": None,
                    "index": 0,
                }
            yield {
                "text": "",
                "tool_use": None,
                "is_finished": True,
                "finish_reason": "stop",
                "usage": {
                    "prompt_tokens": 1,
                    "completion_tokens": CHUNKS,
                    "total_tokens": CHUNKS + 1,
                },
                "index": 0,
            }

    litellm.custom_provider_map = [
        *[m for m in litellm.custom_provider_map if m.get("provider") != "benchtel"],
        {"provider": "benchtel", "custom_handler": LongStream()},
    ]


async def interleaved(
    cases: dict[str, Callable[[], Awaitable[None]]], rounds: int
) -> dict[str, list[float]]:
    """Seconds per run of each case; one warm-up run each, then ``rounds`` in turn."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():
        await fn()
    for _ in range(rounds):
        for name, fn in cases.items():
            began = time.perf_counter()
            await fn()
            times[name].append(time.perf_counter() - began)
    return times


async def main(rounds: int) -> int:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from helix_stream.loop import stream_text
    from helix_stream.telemetry import TelemetrySettings
    from helix_stream.tools import tool

    register_long_stream()
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
                model=MODEL, prompt="go", runtime_context=runtime, telemetry=telemetry
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
