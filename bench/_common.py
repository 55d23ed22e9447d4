"""Shared bench set-up: a litellm custom provider that streams N chunks with no I/O."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def register_bench_provider(chunks: int) -> str:
    """Register ``bench/fast``, which streams ``chunks`` one-word text deltas; return its name."""
    from helix_stream.models._litellm import litellm_module

    litellm = litellm_module()

    class Fast(litellm.CustomLLM):  # type: ignore[misc,name-defined]
        async def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
            for i in range(chunks):
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
                    "completion_tokens": chunks,
                    "total_tokens": chunks + 1,
                },
                "index": 0,
            }

    litellm.custom_provider_map = [
        *[m for m in litellm.custom_provider_map if m["provider"] != "bench"],
        {"provider": "bench", "custom_handler": Fast()},
    ]
    return "bench/fast"


async def interleaved(
    cases: dict[str, Callable[[], Awaitable[Any]]],
    rounds: int,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, list[float]]:
    """Run each case once per round, in turn (so drift hits all alike); seconds per run.

    ``clock=time.process_time`` measures CPU time: on a shared machine it is far less noisy
    than wall time (another tenant's load does not count), and all of this is CPU-bound.
    """
    times: dict[str, list[float]] = {name: [] for name in cases}
    for fn in cases.values():  # warm-up
        await fn()
    for _ in range(rounds):
        for name, fn in cases.items():
            start = clock()
            await fn()
            times[name].append(clock() - start)
    return times


def paired_ratio(times: dict[str, list[float]], case: str, base: str) -> float:
    """The median of per-round ratios ``case / base`` (paired: robust to drift between rounds)."""
    return statistics.median(a / b for a, b in zip(times[case], times[base], strict=True))


def median(values: list[float]) -> float:
    return statistics.median(values)
