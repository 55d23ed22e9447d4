"""Each quirk real OpenAI-compatible servers send comes out right, on both reading paths.

Every body in ``_quirks.py`` is replayed from a loopback server, cut at awkward byte boundaries,
and read by ``hs.stream_text`` three times: through litellm's own stream wrapper (what a
registered callback gets), through helix's direct reader (the default) and through litellm's
wrapper lightened (the path of providers helix has no reader for). Both give the same chunks,
text, reasoning, tool calls, finish reason and usage, or the same typed error — except where
litellm's wrapper drops a content list, where the direct reader reads it whole. No delta is
ever anything but a string.

Where litellm's wrapper drops what a provider sent — a content list, a ``refusal`` delta — the
direct reader reads it: the answer text complete, the thinking as reasoning, the refusal as
text.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.models._direct_openai import OpenAIStream
from tests.models._quirks import QUIRKS, ROLE, chunk, sse
from tests.models._replay import CUTS, ReplayServer, pieces, read_turn


async def read(replay: ReplayServer, body: bytes, *, direct: bool, lightened: bool = False) -> Any:
    """(chunks, step) of one turn, or ("error", type, text)."""
    replay.bodies.append(body)
    result = await read_turn(replay.llm(), direct=direct, lightened=lightened, prompt="Hello")
    return result if result[0] == "error" else (result[0], result[1][0])


LISTS = {"content list: thinking blocks, then text", "content list: thinking and text blocks"}
DROPPED_BY_LITELLM = {*LISTS, "a refusal delta"}


@pytest.mark.parametrize("name", sorted(set(QUIRKS) - DROPPED_BY_LITELLM))
async def test_both_paths_read_each_quirk_alike(
    replay: ReplayServer, readers: list[Any], name: str
) -> None:
    wrapped = await read(replay, QUIRKS[name], direct=False)
    assert readers == []
    direct = await read(replay, QUIRKS[name], direct=True)
    assert len(readers) == 1 and isinstance(readers[0], OpenAIStream)
    assert direct == wrapped
    # litellm's wrapper lightened (the path of providers helix has no reader for)
    assert await read(replay, QUIRKS[name], direct=True, lightened=True) == wrapped


def _step(result: Any) -> Any:
    assert result[0] != "error", result
    return result[1]


async def test_usage_the_provider_did_not_send_is_litellms_estimate(
    replay: ReplayServer,
) -> None:
    for name in (
        "two tool calls, no usage",
        "data without a space, no usage",
        "name-only first fragment, no usage",
        "two complete calls beside empty content, no usage",
        "text then a tool call, no usage chunk",
    ):
        step = _step(await read(replay, QUIRKS[name], direct=True))
        usage = step.usage
        # litellm counts the prompt ("Hello" in a user message: 8 tokens) and the answer.
        assert usage.input_tokens == 8 and usage.output_tokens > 0, (name, usage)
        assert usage.total_tokens == usage.input_tokens + usage.output_tokens


async def test_the_total_is_prompt_plus_completion(replay: ReplayServer) -> None:
    name = "no finish_reason key; a total beyond prompt + completion"
    step = _step(await read(replay, QUIRKS[name], direct=True))
    assert (step.usage.input_tokens, step.usage.output_tokens) == (291, 26)
    assert step.usage.total_tokens == 317 and step.usage.reasoning_tokens == 196


async def test_a_content_list_gives_text_and_reasoning(replay: ReplayServer) -> None:
    both = _step(await read(replay, QUIRKS["content list: thinking and text blocks"], direct=True))
    assert (both.text, both.reasoning) == ("2 + 2 = 4", "The user asks for 2+2.")
    mixed = _step(
        await read(replay, QUIRKS["content list: thinking blocks, then text"], direct=True)
    )
    assert (mixed.text, mixed.reasoning) == ("To cross, look both ways.", "Okay, the user asks.")
    # litellm's wrapper drops most content-list chunks; what reaches helix is read, never a crash.
    for name in DROPPED_BY_LITELLM:
        _step(await read(replay, QUIRKS[name], direct=False))


async def test_the_unseen_quirks_read_as_documented(replay: ReplayServer) -> None:
    refusal = _step(await read(replay, QUIRKS["a refusal delta"], direct=True))
    assert refusal.text == "I can't help with that."
    filtered = _step(await read(replay, QUIRKS["an azure content_filter finish"], direct=True))
    assert (filtered.text, filtered.finish_reason) == ("Here is ", "content-filter")
    parallel = _step(
        await read(replay, QUIRKS["interleaved parallel tool-call fragments"], direct=True)
    )
    assert [(t.id, t.name, t.input) for t in parallel.tool_calls] == [
        ("call_p0", "weather", {"city": "Oslo"}),
        ("call_p1", "time", {"tz": "UTC"}),
    ]
    logprobs = _step(await read(replay, QUIRKS["logprobs on every chunk"], direct=True))
    assert logprobs.text == "Yes."
    cited = await read(replay, QUIRKS["url citation annotations"], direct=True)
    assert [x.url for x in cited[0] if isinstance(x, c.SourceUrl)] == ["https://example.org/repo"]


async def test_a_stream_without_a_finish_reason_fails_on_both_paths(
    replay: ReplayServer,
) -> None:
    for name in ("never a finish reason", "json with spaces, no finish reason"):
        for direct in (False, True):
            failed = await read(replay, QUIRKS[name], direct=direct)
            assert failed[0] == "error" and issubclass(failed[1], hs.errors.ModelError)
            assert "finish_reason" in failed[2]


async def test_an_unknown_content_block_is_skipped_and_logged_once(
    replay: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    odd = [{"type": "image_url", "image_url": {"url": "data:,"}}]
    body = sse(
        ROLE,
        chunk({"content": odd}),
        chunk({"content": [*odd, {"type": "text", "text": "still here"}]}),
        chunk({"content": [{"type": "audio"}]}),
        chunk({}, "stop"),
        chunk(None, usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
    )
    with caplog.at_level(logging.WARNING, logger="helix_stream.models"):
        step = _step(await read(replay, body, direct=True))
    assert step.text == "still here"
    skipped = [r for r in caplog.records if "Skipped a content block" in r.getMessage()]
    assert len(skipped) == 1 and "'image_url'" in skipped[0].getMessage()


@pytest.mark.parametrize(
    "delta",
    [
        pytest.param({"content": {"text": "a dict"}}, id="content as an object"),
        pytest.param({"content": [{"type": "text", "text": 7}]}, id="a text block of a number"),
        pytest.param({"reasoning_content": 3}, id="reasoning as a number"),
        pytest.param(
            {"tool_calls": [{"index": 0, "id": "c", "function": {"name": ["x"]}}]},
            id="a tool name as a list",
        ),
    ],
)
async def test_an_unexpected_shape_is_a_typed_error(
    replay: ReplayServer, delta: dict[str, Any]
) -> None:
    body = sse(ROLE, chunk(delta), chunk({}, "stop"))
    failed = await read(replay, body, direct=True)
    assert failed[0] == "error" and failed[1] is hs.errors.ModelError, failed
    assert "helix cannot read it" in failed[2]


async def test_tool_arguments_sent_as_an_object_are_their_json(replay: ReplayServer) -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}
    step = _step(await read(replay, sse(ROLE, chunk({"tool_calls": [call]}), chunk({}, "tool_calls"),
                                        chunk(None, usage={"prompt_tokens": 1, "completion_tokens": 1})),
                            direct=True))  # fmt: skip
    assert [(t.name, t.input, t.arguments) for t in step.tool_calls] == [
        ("f", {"a": 1}, '{"a": 1}')
    ]


def test_the_replay_server_cuts_bodies_everywhere() -> None:
    body = QUIRKS["a refusal delta"]
    cut = list(pieces(body, CUTS))
    assert b"".join(cut) == body and len(cut) > 10 and min(len(p) for p in cut) == 1


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param({"choices": {"0": {"delta": {"content": "x"}}}}, id="choices as an object"),
        pytest.param({"choices": [{"index": 0, "delta": "text"}]}, id="a delta as a string"),
        pytest.param(
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]},
            id="a function as a string",
        ),
        pytest.param(
            {"choices": [{"index": 0, "delta": {"tool_calls": {"a": 1}}}]}, id="calls as an object"
        ),
        pytest.param({"choices": ["x", 3]}, id="choices that are not objects"),
    ],
)
async def test_a_malformed_chunk_is_never_a_bare_exception(
    replay: ReplayServer, bad: dict[str, Any]
) -> None:
    for direct in (False, True):
        result = await read(
            replay, sse(ROLE, bad, chunk({"content": "ok"}), chunk({}, "stop")), direct=direct
        )
        # Read past (the rest of the answer arrives), or a typed error: never anything else.
        assert result[0] == "error" or result[1].text.endswith("ok"), result
        if result[0] == "error":
            assert issubclass(result[1], hs.errors.HelixError)
