"""Lifecycle callbacks: their order and events, performance figures against a scripted stream
with known timing (within 20%), a raising callback, and ``on_abort`` never with ``on_end``."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.loop import _lifecycle as lc
from tests.loopback import LoopbackServer, Reply, text, tool_calls

NAMES = lc.LIFECYCLE_NAMES


pytestmark = pytest.mark.usefixtures("warm_loopback")  # litellm's set-up is not a stall


def _recorder(seen: list[tuple[str, Any]]) -> dict[str, Any]:
    """Every lifecycle callback, half of them async."""

    def make(name: str, index: int) -> Any:
        if index % 2:

            async def async_callback(event: Any) -> None:
                seen.append((name, event))

            return async_callback
        return lambda event: seen.append((name, event))

    return {name: make(name, i) for i, name in enumerate(NAMES)}


def _near(value: float | None, expected: float) -> bool:
    return value is not None and abs(value - expected) <= 0.2 * expected


async def test_model_call_figures_match_a_stream_with_known_timing(
    loopback: LoopbackServer,
) -> None:
    # Six content deltas, each 0.2 s after the one before (the first 0.2 s after the head).
    words = ["a ", "b ", "c ", "d ", "e ", "f"]
    loopback.script(Reply(deltas=[{"content": w} for w in words], delay=0.2, usage=(10, 12)))
    ends: list[Any] = []
    result = hs.stream_text(**loopback.llm(), prompt="go", on_model_call_end=ends.append)
    steps = await result.steps()
    perf = ends[0].performance
    assert _near(perf.time_to_first_chunk, 0.2)
    assert _near(perf.longest_gap, 0.2) and _near(perf.median_gap, 0.2)
    assert _near(perf.response_time, 1.2)
    assert _near(perf.output_tokens_per_second, 12 / 1.0)  # after the first chunk
    assert _near(perf.effective_total_tokens_per_second, 22 / 1.2)
    step_perf = steps[0].performance
    assert step_perf is not None and step_perf.model == perf
    assert step_perf.model_time == perf.response_time and step_perf.tool_time < 0.05
    assert perf.response_time <= step_perf.step_time < perf.response_time + 0.2


async def test_the_events_come_in_order_with_their_figures(loopback: LoopbackServer) -> None:
    @hs.tool
    async def lookup(q: str) -> str:
        """Look up."""
        await asyncio.sleep(0.3)
        return "found"

    seen: list[tuple[str, Any]] = []
    finished: list[Any] = []
    loopback.script(tool_calls(("lookup", {"q": "x"}), ("missing", {})), text("done"))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="go",
        tools=[lookup],
        on_step_finish=finished.append,
        **_recorder(seen),
    )
    assert await result.text() == "done"
    names = [name for name, _ in seen]
    assert names[:4] == ["on_start", "on_step_start", "on_model_call_start", "on_model_call_end"]
    step_one = names[: names.index("on_step_end") + 1]
    assert step_one.count("on_tool_call_end") == 2 and step_one.count("on_tool_call_start") == 1
    assert names[len(step_one) :] == [
        "on_step_start", "on_model_call_start", "on_model_call_end", "on_step_end", "on_end"
    ]  # fmt: skip
    tool_ends = {e.call.name: e for n, e in seen if n == "on_tool_call_end"}
    assert tool_ends["lookup"].outcome == "success" and _near(tool_ends["lookup"].duration, 0.3)
    assert tool_ends["missing"].outcome == "not_executed" and tool_ends["missing"].duration == 0
    assert not tool_ends["lookup"].approved
    step_end = next(e for n, e in seen if n == "on_step_end")
    assert step_end.performance.tool_time >= 0.3 and step_end.step is finished[0]
    assert step_end.performance == finished[0].performance  # on_step_finish still works
    assert "on_abort" not in names


async def test_a_tool_past_its_limit_ends_timed_out(loopback: LoopbackServer) -> None:
    @hs.tool
    async def slow(q: str) -> str:
        """Slow."""
        await asyncio.sleep(5)
        return "late"

    ends: list[Any] = []
    loopback.script(tool_calls(("slow", {"q": "x"})), text("ok"))
    result = hs.stream_text(
        **loopback.llm(), prompt="go", tools=[slow], timeout=hs.Timeout(tool=0.5),
        on_tool_call_end=ends.append,
    )  # fmt: skip
    assert await result.text() == "ok"
    assert ends[0].outcome == "timed_out" and _near(ends[0].duration, 0.5)


async def test_a_raising_callback_is_logged_and_never_breaks_the_run(
    loopback: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(event: Any) -> None:
        raise RuntimeError("callback bug")

    loopback.script(text("still here"))
    with caplog.at_level(logging.ERROR, logger="helix_stream.loop"):
        result = hs.stream_text(**loopback.llm(), prompt="go", **{name: broken for name in NAMES})
        assert await result.text() == "still here"
    failed = [r for r in caplog.records if "callback raised" in r.getMessage()]
    assert {r.args[1] for r in failed} >= {"on_start", "on_step_end", "on_end"}  # type: ignore[index]


async def test_on_abort_fires_on_aclose_and_on_cancel_never_with_on_end(
    loopback: LoopbackServer,
) -> None:
    seen: list[tuple[str, Any]] = []
    loopback.script(text("Once upon a time", hang=True))
    result = hs.stream_text(**loopback.llm(), prompt="go", **_recorder(seen))
    async for chunk in result:
        if chunk.type == "text-delta":
            break
    await result.aclose()
    names = [name for name, _ in seen]
    assert names[-1] == "on_abort" and "on_end" not in names
    assert list(seen[-1][1].steps) == []

    seen.clear()
    loopback.script(text("Once upon a time", hang=True))

    async def consume() -> None:
        async for _ in hs.stream_text(**loopback.llm(), prompt="go", **_recorder(seen)):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    names = [name for name, _ in seen]
    assert names.count("on_abort") == 1 and "on_end" not in names


async def test_a_failed_run_gets_on_error_not_on_end_or_on_abort(loopback: LoopbackServer) -> None:
    seen: list[tuple[str, Any]] = []
    errors: list[Any] = []
    loopback.script(text("x", headers_only=True, stall_for=3))
    result = hs.stream_text(
        **loopback.llm(), prompt="go", timeout=hs.Timeout(first_chunk=0.5), max_retries=0,
        on_error=errors.append, **_recorder(seen),
    )  # fmt: skip
    assert [c.type async for c in result][-1] == "error"
    names = [name for name, _ in seen]
    assert "on_end" not in names and "on_abort" not in names and len(errors) == 1
    end = next(e for n, e in seen if n == "on_model_call_end")
    assert (
        isinstance(end.error, hs.ModelTimeoutError) and end.performance.time_to_first_chunk is None
    )
