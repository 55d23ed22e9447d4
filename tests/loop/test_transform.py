"""``transform=`` and ``hs.smooth_stream``: applied after the loop, before every consumer; the
text is unchanged and chunks of other types keep their order."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.errors import InvalidRequestError
from tests.loopback import LoopbackServer, Reply, text, tool_calls

ANSWER = "The quick brown\nfox jumps over\n\nthe lazy dog."


def _deltas() -> list[dict[str, Any]]:
    return [
        {"reasoning_content": "Let me think about"},
        {"reasoning_content": " it carefully."},
        {"content": "The qu"},
        {"content": "ick brown\nfox ju"},
        {"content": "mps over\n\nthe lazy dog."},
    ]


def _not_text(seen: list[Any]) -> list[str]:
    return [x.type for x in seen if not isinstance(x, (c.TextDelta, c.ReasoningDelta))]


def _joined(seen: list[Any], cls: type) -> str:
    return "".join(x.delta for x in seen if isinstance(x, cls))


@pytest.mark.parametrize(
    ("chunking", "pieces"),
    [
        ("word", ["The ", "quick ", "brown\n", "fox ", "jumps ", "over\n\n", "the ", "lazy ", "dog."]),
        ("line", ["The quick brown\n", "fox jumps over\n\n", "the lazy dog."]),
        (re.compile(r"o"), ["The quick bro", "wn\nfo", "x jumps o", "ver\n\nthe lazy do", "g."]),
    ],
)  # fmt: skip
async def test_smooth_stream_rechunks_text_and_keeps_everything_else(
    loopback: LoopbackServer, chunking: Any, pieces: list[str]
) -> None:
    loopback.script(Reply(deltas=_deltas()), Reply(deltas=_deltas()))
    plain = [x async for x in hs.stream_text(**loopback.llm(), prompt="go")]
    result = hs.stream_text(
        **loopback.llm(), prompt="go", transform=hs.smooth_stream(delay=None, chunking=chunking)
    )
    smooth = [x async for x in result]
    assert _joined(smooth, c.TextDelta) == _joined(plain, c.TextDelta) == ANSWER
    assert _joined(smooth, c.ReasoningDelta) == "Let me think about it carefully."
    assert [x.delta for x in smooth if isinstance(x, c.TextDelta)] == pieces
    assert _not_text(smooth) == _not_text(plain)  # the other chunks, in their order
    assert await result.text() == ANSWER


async def test_smooth_stream_paces_its_pieces(loopback: LoopbackServer) -> None:
    loopback.script(text("one two three four five six", pieces=1))
    started = time.monotonic()
    result = hs.stream_text(**loopback.llm(), prompt="go", transform=hs.smooth_stream(delay=0.1))
    assert await result.text() == "one two three four five six"
    assert 0.45 <= time.monotonic() - started < 2.0  # five cut pieces, 0.1 s apart


async def test_transforms_apply_in_order_before_on_chunk_and_the_ui_stream(
    loopback: LoopbackServer,
) -> None:
    async def upper(stream: AsyncIterator[c.Chunk]) -> AsyncIterator[c.Chunk]:
        async for chunk in stream:
            if isinstance(chunk, c.TextDelta):
                chunk = c.TextDelta(id=chunk.id, delta=chunk.delta.upper())
            yield chunk

    async def tag(stream: AsyncIterator[c.Chunk]) -> AsyncIterator[c.Chunk]:
        async for chunk in stream:
            yield chunk
            if isinstance(chunk, c.StartStep):
                yield c.DataChunk(name="tag", data={"after": "start-step"}, transient=True)

    seen: list[Any] = []
    loopback.script(tool_calls(("missing", {})), text("done now"))
    result = hs.stream_text(
        **loopback.llm(), prompt="go", transform=[upper, tag], on_chunk=seen.append
    )
    ui = [x async for x in result.to_ui_message_stream()]
    deltas = [x["delta"] for x in ui if isinstance(x, dict) and x.get("type") == "text-delta"]
    assert "".join(deltas) == "DONE NOW"
    assert [x.type for x in seen].count("data-tag") == 2  # one per step, through on_chunk
    assert seen.index(next(x for x in seen if x.type == "tool-not-executed")) < seen.index(
        next(x for x in seen if x.type == "finish-step")
    )


def test_a_transform_that_is_not_a_function_is_refused(loopback: LoopbackServer) -> None:
    with pytest.raises(InvalidRequestError):
        hs.stream_text(**loopback.llm(), prompt="go", transform=["nope"])
    with pytest.raises(InvalidRequestError):
        hs.smooth_stream(chunking="[")
    with pytest.raises(InvalidRequestError):
        hs.smooth_stream(delay=-1)
    assert loopback.requests == []
