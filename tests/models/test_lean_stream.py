"""What helix skips in litellm's stream wrapper changes nothing anyone can observe.

Through the loopback server (real HTTP through litellm): a registered ``CustomLogger`` gets the
same success and failure events, a cache still stores whole answers, and without either the
usage and text helix reports are the same as with litellm left alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.models import _lean_stream
from helix_stream.models._litellm import litellm_module
from tests.loopback import LoopbackServer, error, text

_CALLBACK_LISTS = ("callbacks", "success_callback", "failure_callback", "_async_success_callback",
                   "_async_failure_callback", "input_callback")  # fmt: skip


@pytest.fixture
def litellm() -> Iterator[Any]:
    """litellm, with its callback lists and cache put back afterwards."""
    module = litellm_module()
    saved = {name: list(getattr(module, name)) for name in _CALLBACK_LISTS}
    cache = module.cache
    try:
        yield module
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
        module.cache = cache
        _lean_stream.enabled = True


@pytest.fixture
def builds(litellm: Any) -> Iterator[list[int]]:
    """The number of chunks each ``stream_chunk_builder`` call got."""
    original = litellm.stream_chunk_builder
    seen: list[int] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(len(kwargs["chunks"]))
        return original(*args, **kwargs)

    litellm.stream_chunk_builder = spy
    try:
        yield seen
    finally:
        litellm.stream_chunk_builder = original


def _logger(litellm: Any) -> Any:
    class Recorder(litellm.integrations.custom_logger.CustomLogger):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.events: list[tuple[Any, ...]] = []

        async def async_log_success_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            response = response_obj
            message = response.choices[0].message
            self.events.append(
                (
                    "success",
                    kwargs["messages"][-1]["content"],
                    message.content,
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    kwargs.get("stream"),
                )
            )

        async def async_log_failure_event(
            self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
        ) -> None:
            exc = kwargs.get("exception")
            self.events.append(("failure", kwargs["messages"][-1]["content"], type(exc).__name__))

    return Recorder()


async def _events(recorder: Any, count: int) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + 10
    while len(recorder.events) < count:  # litellm logs from tasks of its own
        assert time.monotonic() < deadline, recorder.events
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)  # nothing more arrives
    return list(recorder.events)


async def _one_success_one_failure(loopback: LoopbackServer, recorder: Any) -> list[Any]:
    recorder.events.clear()
    loopback.script(text("Hello from the loopback", pieces=4, usage=(11, 7)), error(400))
    ok = hs.stream_text(**loopback.llm(), prompt="first")
    assert await ok.text() == "Hello from the loopback"
    failed = hs.stream_text(**loopback.llm(), prompt="second")
    with pytest.raises(hs.errors.ModelError):
        await failed.text()
    return await _events(recorder, 2)


async def test_a_custom_logger_gets_the_same_success_and_failure_events(
    loopback: LoopbackServer, litellm: Any, builds: list[int]
) -> None:
    recorder = _logger(litellm)
    litellm.callbacks = [recorder]
    _lean_stream.enabled = False  # litellm's streams exactly as litellm makes them
    untouched = await _one_success_one_failure(loopback, recorder)
    _lean_stream.enabled = True
    lightened = await _one_success_one_failure(loopback, recorder)
    assert lightened == untouched
    assert sorted(untouched) == [
        ("failure", "second", "BadRequestError"),
        ("success", "first", "Hello from the loopback", 11, 7, True),
    ]
    # With a callback registered, litellm assembled the whole answer from every chunk.
    assert set(builds) == {builds[0]} and builds[0] >= 6, builds


@pytest.mark.parametrize(
    ("setting", "params"),
    [
        pytest.param("cache", {}, id="a cache"),
        pytest.param(None, {"caching": True}, id="caching on the call"),
        pytest.param(None, {"success_callback": ["x"]}, id="a callback on the call"),
        pytest.param("_async_success_callback", {}, id="an async success callback"),
        pytest.param("failure_callback", {}, id="a failure callback"),
    ],
)
def test_anything_that_can_read_the_answer_keeps_litellm_whole(
    litellm: Any, setting: str | None, params: dict[str, Any]
) -> None:
    assert _lean_stream.nothing_reads_the_answer(litellm, {}) is True
    if setting == "cache":
        litellm.cache = object()  # any cache reads whole answers
    elif setting is not None:
        setattr(litellm, setting, [*getattr(litellm, setting), _logger(litellm)])
    assert _lean_stream.nothing_reads_the_answer(litellm, params) is False


async def test_without_callbacks_the_usage_and_text_are_the_same(
    loopback: LoopbackServer, litellm: Any, builds: list[int]
) -> None:
    seen, sizes = [], []
    for enabled in (False, True):
        builds.clear()
        _lean_stream.enabled = enabled
        loopback.script(text("one two three four five six", pieces=6, usage=(23, 9)))
        # Model middleware sees litellm's own chunks: no direct reader (test_direct_stream.py).
        llm = loopback.llm()
        llm["model"] = hs.wrap_model(llm["model"], [hs.ModelMiddleware()])
        result = hs.stream_text(**llm, prompt="count")
        steps = await result.steps()
        seen.append((steps[0].text, steps[0].usage, result.usage, steps[0].finish_reason))
        sizes.append(list(builds))
    assert seen[0] == seen[1]
    assert seen[0][1].input_tokens == 23 and seen[0][1].output_tokens == 9
    # litellm assembles the whole answer from every chunk (twice); the lightened stream, once,
    # from the chunks with the usage and the finish reason.
    assert min(sizes[0]) >= 7 and len(sizes[1]) == 1 and sizes[1][0] <= 3, sizes


def test_litellms_cache_entry_without_a_cache_reads_nothing(litellm: Any) -> None:
    # litellm's Gemini context caching registers "cache" in the callback lists at import
    # (with litellm.cache still None): no answer is read, so the savings stay on.
    for name in ("success_callback", "_async_success_callback", "input_callback"):
        setattr(litellm, name, [*getattr(litellm, name), "cache"])
    assert litellm.cache is None
    assert _lean_stream.nothing_reads_the_answer(litellm, {}) is True
    litellm.cache = object()
    assert _lean_stream.nothing_reads_the_answer(litellm, {}) is False
