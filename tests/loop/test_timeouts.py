"""``timeout=``: each limit fires at its time against the loopback server (real HTTP through
litellm), with the right error or tool result; what was seen is stored; the session goes on.

Limits are short (0.5-1 s); a limit fires within 0.5 s of its time. The loopback's silent
stalls write nothing at all (not even a keep-alive) for ``stall_for`` seconds.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.errors import InvalidRequestError, ModelTimeoutError, ModelUnavailableError
from tests.loopback import LoopbackServer, Reply, text, tool_calls

SLACK = 0.5  # a limit fires within this of its time


@pytest.fixture(autouse=True)
async def _warm(loopback: LoopbackServer) -> None:
    """litellm's first call in a process does seconds of set-up: not a stall to measure."""
    for middleware in (None, [hs.default_settings(temperature=0)]):
        loopback.script(text("warm"))
        assert await hs.stream_text(**loopback.llm(), prompt="w", middleware=middleware).text()
    loopback.reset()


async def _run(result: hs.StreamTextResult) -> tuple[list[Any], float]:
    started = time.monotonic()
    seen = [chunk async for chunk in result]
    return seen, time.monotonic() - started


def _error(seen: list[Any]) -> BaseException:
    errors = [x.error for x in seen if isinstance(x, c.ErrorChunk)]
    assert len(errors) == 1, [x.type for x in seen]
    return errors[0]


def _text(seen: list[Any]) -> str:
    return "".join(x.delta for x in seen if isinstance(x, c.TextDelta))


@pytest.mark.parametrize("middleware", [None, [hs.default_settings(temperature=0)]])
async def test_a_stall_after_three_chunks_ends_the_step_at_the_chunk_limit_unretried(
    loopback: LoopbackServer, middleware: Any
) -> None:
    # Both read paths: the body read directly (no middleware) and litellm's own wrapper.
    words = ["one ", "two ", "three ", "four"]
    loopback.script(Reply(deltas=[{"content": w} for w in words], stall_after=3))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="go",
        middleware=middleware,
        timeout=hs.Timeout(first_chunk=5, chunk=0.5),
        max_retries=2,
    )
    seen, took = await _run(result)
    error = _error(seen)
    assert isinstance(error, ModelTimeoutError) and error.code == "model_timeout"
    assert error.retryable and error.limit == "chunk" and error.after == 0.5
    assert "chunk limit" in error.message and "0.5 s" in error.message
    assert abs(took - 0.5) < SLACK
    assert _text(seen) == "one two three "  # what was seen, and nothing repeated
    assert len(loopback.requests) == 1  # after text has streamed it is not retried


async def test_no_first_byte_is_retried_under_max_retries_and_then_answers(
    loopback: LoopbackServer,
) -> None:
    loopback.script(text("x", wait_headers=True, stall_for=3), text("the answer"))
    result = hs.stream_text(
        **loopback.llm(), prompt="go", timeout=hs.Timeout(first_chunk=0.5), max_retries=1
    )
    seen, took = await _run(result)
    assert _text(seen) == "the answer"
    assert len(loopback.requests) == 2
    assert took < 0.5 + 2.0 + SLACK  # the limit, then the first retry's backoff (<= 2 s)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param({"wait_headers": True}, id="no first byte"),
        pytest.param({"headers_only": True}, id="headers then nothing"),
        pytest.param({"stall_after": 0}, id="a role-only chunk then nothing"),
    ],
)
async def test_nothing_of_content_ends_the_step_at_the_first_chunk_limit(
    loopback: LoopbackServer, reply: dict[str, Any]
) -> None:
    loopback.script(text("never seen", stall_for=3, **reply))
    result = hs.stream_text(
        **loopback.llm(), prompt="go", timeout=hs.Timeout(first_chunk=0.7), max_retries=0
    )
    seen, took = await _run(result)
    error = _error(seen)
    assert isinstance(error, ModelTimeoutError) and error.limit == "first_chunk"
    assert abs(took - 0.7) < SLACK and _text(seen) == ""


async def test_the_step_limit_covers_a_slow_but_steady_stream(loopback: LoopbackServer) -> None:
    loopback.script(text("a b c d e f g h i j", pieces=10, delay=0.2))
    result = hs.stream_text(
        **loopback.llm(), prompt="go", timeout=hs.Timeout(step=0.9, chunk=0.5), max_retries=2
    )
    seen, took = await _run(result)
    error = _error(seen)
    assert isinstance(error, ModelTimeoutError) and error.limit == "step"
    assert abs(took - 0.9) < SLACK and _text(seen)
    assert len(loopback.requests) == 1


def _sleeper(seconds: float) -> hs.Tool:
    @hs.tool
    async def slow_api(q: str) -> str:
        """Take a while."""
        await asyncio.sleep(seconds)
        return "done"

    return slow_api


async def test_a_tool_past_its_limit_is_cancelled_and_the_model_gets_an_error_result(
    loopback: LoopbackServer,
) -> None:
    loopback.script(tool_calls(("slow_api", {"q": "x"})), text("I could not."))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="go",
        tools=[_sleeper(5)],
        timeout=hs.Timeout(tool=3, tools={"slow_api": 0.5}),
    )
    seen, took = await _run(result)
    errors = [x for x in seen if isinstance(x, c.ToolOutputError)]
    assert [e.error_text for e in errors] == ["tool 'slow_api' timed out after 0.5 s"]
    assert abs(took - 0.5) < SLACK and _text(seen) == "I could not."  # the loop went on
    sent = loopback.bodies()[1]["messages"][-1]
    assert sent["role"] == "tool" and "timed out after 0.5 s" in sent["content"]


async def test_the_total_limit_ends_the_run_with_the_typed_error(loopback: LoopbackServer) -> None:
    loopback.script(tool_calls(("slow_api", {"q": "x"})), text("never asked"))
    result = hs.stream_text(**loopback.llm(), prompt="go", tools=[_sleeper(5)], timeout=0.8)
    seen, took = await _run(result)
    error = _error(seen)
    assert isinstance(error, ModelTimeoutError) and error.limit == "total"
    assert abs(took - 0.8) < SLACK and len(loopback.requests) == 1


async def test_a_prepare_step_timeout_applies_to_its_step_only(loopback: LoopbackServer) -> None:
    loopback.script(text("x", headers_only=True, stall_for=3))

    def tight(step: hs.StepInput) -> dict[str, Any]:
        return {"timeout": hs.Timeout(first_chunk=0.5)}

    result = hs.stream_text(
        **loopback.llm(),
        prompt="go",
        prepare_step=tight,
        timeout=hs.Timeout(first_chunk=5),
        max_retries=0,
    )
    seen, took = await _run(result)
    error = _error(seen)
    assert isinstance(error, ModelTimeoutError) and error.limit == "first_chunk"
    assert abs(took - 0.5) < SLACK
    assert "timeout" not in loopback.bodies()[0]  # never sent to the provider


@pytest.mark.parametrize(
    "how",
    [
        pytest.param({"middleware": [hs.default_settings(timeout=0.5)]}, id="litellm's wrapper"),
        pytest.param({"stream_timeout": 0.5}, id="the body read directly"),
    ],
)
async def test_litellm_read_timeout_in_a_silent_stream_is_a_model_timeout(
    loopback: LoopbackServer, how: dict[str, Any]
) -> None:
    # litellm's own read timeout, not one of timeout='s: it fires while the stream is silent.
    loopback.script(text("one two", stall_after=1, stall_for=3))
    result = hs.stream_text(**loopback.llm(), prompt="go", max_retries=0, **how)
    seen, took = await _run(result)
    error = _error(seen)
    assert isinstance(error, ModelTimeoutError) and not isinstance(error, ModelUnavailableError)
    assert error.limit is None and took < 3  # the HTTP client's own limit


def test_translate_error_sees_a_timeout_inside_litellm_s_midstream_wrapper() -> None:
    from helix_stream.models._litellm import litellm_module, translate_error

    lx = litellm_module().exceptions
    inner = lx.Timeout(message="Timeout on reading data from socket", model="m", llm_provider="o")
    wrapped = lx.MidStreamFallbackError(
        message="stream", model="m", llm_provider="openai", original_exception=inner
    )
    assert isinstance(translate_error(wrapped), ModelTimeoutError)


@pytest.mark.parametrize("value", [0, -1, "5", True, {"total": 1}])
def test_a_wrong_timeout_is_refused_before_anything_is_sent(
    loopback: LoopbackServer, value: Any
) -> None:
    with pytest.raises(InvalidRequestError):
        hs.stream_text(**loopback.llm(), prompt="go", timeout=value)
    with pytest.raises(InvalidRequestError):
        hs.Timeout(tools={"x": 0})
    assert loopback.requests == []


async def test_generate_text_takes_timeout_too(loopback: LoopbackServer) -> None:
    loopback.script(text("one two three", stall_after=2, stall_for=3))
    with pytest.raises(ModelTimeoutError) as info:
        await hs.generate_text(**loopback.llm(), prompt="go", timeout=hs.Timeout(chunk=0.5))
    assert info.value.limit == "chunk"


def test_limits_merge_limit_by_limit() -> None:
    agent = hs.Timeout(total=60, chunk=10, tools={"a": 1, "b": 2})
    run = hs.Timeout(chunk=3, tools={"b": 5})
    merged = run.over(agent)
    assert (merged.total, merged.chunk, merged.tools) == (60, 3, {"a": 1, "b": 5})
    assert merged.for_tool("b") == 5 and merged.for_tool("c") is None
    assert json.dumps(merged.tools) == '{"a": 1, "b": 5}'
