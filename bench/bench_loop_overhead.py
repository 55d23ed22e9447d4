"""The loop's overhead over iterating the same litellm stream raw (budget: ratio <= 1.10).

Run: ``.venv/bin/python bench/bench_loop_overhead.py`` (or ``make bench``).

The same custom provider streams 5,000 chunks; each round iterates it raw through litellm,
through ``stream_text``, and through ``stream_text`` + the AI SDK UI transformer + SSE
encoding, interleaved in one process. It reports CPU time (the work is CPU-bound, and wall
time on a shared machine is noisy) and the median of the per-round ratios.
"""

from __future__ import annotations

import asyncio
import sys
import time

from _common import interleaved, median, paired_ratio, register_bench_provider

CHUNKS = 5_000
ROUNDS = 25


async def main() -> int:
    import helix_stream as hs
    from helix_stream.models._litellm import litellm_module

    litellm = litellm_module()
    model = register_bench_provider(CHUNKS)
    messages = [{"role": "user", "content": "go"}]

    async def raw() -> None:
        stream = await litellm.acompletion(
            model=model, messages=messages, stream=True, stream_options={"include_usage": True}
        )
        n = 0
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                n += 1
        assert n == CHUNKS, n

    async def loop() -> None:
        n = 0
        async for chunk in hs.stream_text(model=model, messages=messages):
            if chunk.type == "text-delta":
                n += 1
        assert n == CHUNKS, n

    cases = {"raw litellm": raw, "stream_text": loop}
    try:
        from helix_stream.transformers import to_ui_message_stream
        from helix_stream.transformers._sse import encode_sse  # type: ignore[attr-defined]

        async def sse() -> None:
            n = 0
            async for ui in to_ui_message_stream(hs.stream_text(model=model, messages=messages)):
                encode_sse(ui)
                n += 1
            assert n >= CHUNKS, n

        cases["stream_text + UI + SSE"] = sse
    except ImportError:
        pass

    # CPU time, paired per round: wall time on a shared 2-core machine swings by +-10%.
    times = await interleaved(cases, ROUNDS, clock=time.process_time)
    worst = 1.0
    print(
        f"{CHUNKS} chunks, {ROUNDS} interleaved rounds, CPU time; ratio = median of per-round ratios"
    )
    for name, values in times.items():
        ratio = paired_ratio(times, name, "raw litellm")
        if name != "raw litellm":
            worst = max(worst, ratio)
        per_chunk = median(values) / CHUNKS * 1e6
        print(
            f"  {name:26s} {median(values) * 1000:8.1f} ms   ratio {ratio:.3f}   {per_chunk:.1f} us/chunk"
        )
    print(f"worst ratio {worst:.3f} (budget 1.10): {'OK' if worst <= 1.10 else 'OVER BUDGET'}")
    return 0 if worst <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
