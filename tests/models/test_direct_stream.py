"""helix reads an OpenAI stream's body itself only where nothing can tell the difference.

Through the loopback server (real HTTP through litellm): for each kind of answer and each
failure, the chunks, the step results and the errors are the same as with litellm's own stream
wrapper; the direct reader is used only without callbacks, cache, model middleware or a
parameter that changes litellm's chunks; and the SSE decoder takes bytes cut anywhere.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models import _direct_stream, _lean_stream
from helix_stream.models._litellm import acompletion, litellm_module
from tests.loopback import LoopbackServer, Reply, text, tool_calls


def _comparable(chunks: list[Any]) -> list[Any]:
    # The message id is made per turn; everything else must match.
    return [c for c in chunks if type(c).__name__ != "Start"]


async def _run(loopback: LoopbackServer, reply: Reply, *, direct: bool, **kw: Any) -> Any:
    _lean_stream.enabled = direct
    loopback.script(reply)
    result = hs.stream_text(**loopback.llm(), prompt="go", **kw)
    chunks = [chunk async for chunk in result]
    steps = await result.steps()
    return _comparable(chunks), steps


class _City(BaseModel):
    city: str


_TOOL = hs.tool(
    name="weather", description="Weather", input_schema=_City, execute=lambda i: f"sun in {i.city}"
)

_CITATION = {"type": "url_citation", "url_citation": {"url": "https://a.example/", "title": "A"}}

ANSWERS = {
    "text": (text("Hello there, from the direct reader", pieces=6, usage=(12, 6)), {}),
    "tool calls": (
        tool_calls(("weather", {"city": "Paris"}), ("weather", {"city": "Oslo"}), fragment=3),
        {"tools": [_TOOL], "stop_when": hs.step_count_is(1)},
    ),
    "reasoning": (
        Reply(deltas=[{"reasoning_content": "let me "}, {"reasoning": "think"}, {"content": "4"}]),
        {},
    ),
    "usage details": (
        text(
            "cached",
            usage=(40, 3),
            usage_details={
                "prompt_tokens_details": {"cached_tokens": 32},
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        ),
        {},
    ),
    "citations": (
        Reply(
            deltas=[
                {"content": "see "},
                {"content": "this", "annotations": [_CITATION]},
            ]
        ),
        {},
    ),
}


@pytest.mark.parametrize("name", ANSWERS)
async def test_the_chunks_and_steps_are_litellms(
    loopback: LoopbackServer, readers: list[Any], name: str
) -> None:
    reply, kw = ANSWERS[name]
    kept = await _run(loopback, reply, direct=False, **kw)
    assert readers == []
    direct = await _run(loopback, reply, direct=True, **kw)
    assert readers and all(isinstance(r, _direct_stream.DirectStream) for r in readers)
    assert direct[0] == kept[0]
    assert direct[1] == kept[1]


FAILURES = {
    "an error event": Reply(
        deltas=[{"content": "a"}, {"content": "b"}], fail_after=1, error="boom"
    ),
    "an error at the end": Reply(deltas=[{"content": "a"}], midstream_error="overloaded"),
    "a body cut short": Reply(deltas=[{"content": "a"}], truncate=True),
}


@pytest.mark.parametrize("name", FAILURES)
async def test_a_failure_raises_what_litellm_raises(
    loopback: LoopbackServer, readers: list[Any], name: str
) -> None:
    seen = []
    for direct in (False, True):
        _lean_stream.enabled = direct
        loopback.script(FAILURES[name])
        result = hs.stream_text(**loopback.llm(), prompt="go", max_retries=0)
        with pytest.raises(hs.errors.ModelError) as caught:
            await result.text()
        seen.append((type(caught.value), str(caught.value)))
    assert any(isinstance(r, _direct_stream.DirectStream) for r in readers)
    assert seen[0] == seen[1]


async def test_closing_early_closes_the_response(loopback: LoopbackServer) -> None:
    await _lean_stream_loaded()
    loopback.script(Reply(deltas=[{"content": "a"}], hang=True))
    stream = await acompletion(direct=True, stream=True, messages=_MESSAGES, **loopback.llm())
    assert isinstance(stream, _direct_stream.DirectStream)
    first = await anext(aiter(stream))
    assert first.choices[0].delta.role == "assistant"
    await stream.aclose()
    assert stream._response.is_closed


_MESSAGES = [{"role": "user", "content": "hi"}]


async def _lean_stream_loaded() -> None:
    from helix_stream.models._litellm import ensure_litellm

    await ensure_litellm()


@pytest.mark.parametrize(
    "case",
    ["a callback", "model middleware", "n", "a budget"],
)
async def test_litellm_keeps_streams_someone_else_can_read(
    loopback: LoopbackServer, readers: list[Any], case: str
) -> None:
    await _lean_stream_loaded()
    litellm = litellm_module()
    # litellm copies a registered logger into its other callback lists: put back every one.
    saved = {name: list(getattr(litellm, name)) for name in _lean_stream._GLOBAL_CALLBACK_LISTS}
    saved_budget = litellm.max_budget
    llm: dict[str, Any] = dict(loopback.llm())
    try:
        if case == "a callback":
            litellm.callbacks = [litellm.integrations.custom_logger.CustomLogger()]
        elif case == "model middleware":
            llm["model"] = hs.wrap_model(llm["model"], [hs.ModelMiddleware()])
        elif case == "n":
            llm["n"] = 1
        elif case == "a budget":
            litellm.max_budget = 1000.0
        loopback.script(text("kept whole"))
        assert await hs.stream_text(**llm, prompt="go").text() == "kept whole"
    finally:
        for name, value in saved.items():
            setattr(litellm, name, value)
        litellm.max_budget = saved_budget
    assert readers == [] or readers == [None]
    assert not any(isinstance(r, _direct_stream.DirectStream) for r in readers)


def test_events_are_decoded_from_bytes_cut_anywhere() -> None:
    body = (
        b": a comment\r\n"
        b"event: message\r\n"
        b'data: {"a": 1}\r\n\r\n'
        b"id: 7\n"
        b"data: first line\n"
        b"data:second line\n\n"
        b"retry: 10\n\n"  # no data: no event
        b"data: [DONE]\n\n"
        b'data: {"after": "done"}\n\n'  # nothing after [DONE] counts
    )
    expected = [b'{"a": 1}', b"first line\nsecond line"]
    for cut in range(1, len(body)):
        events = _direct_stream.Events()
        got = events.feed(body[:cut])
        if not events.done:
            got += events.feed(body[cut:])
        assert got == expected and events.done, cut
    events = _direct_stream.Events()
    one_by_one = []
    for byte in body:
        if not events.done:
            one_by_one += events.feed(bytes([byte]))
    assert one_by_one == expected
