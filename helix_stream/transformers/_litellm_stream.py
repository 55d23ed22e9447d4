"""A raw ``litellm.acompletion(..., stream=True)`` stream as internal chunks.

This module owns :func:`litellm_to_chunks`, so that a single mapping to the AI SDK UI stream
serves both the generation loop and users who already stream with litellm. The stream is read
by :class:`helix_stream.models._parse.StepParser` — the same parser the loop uses — and framed
as one step: ``Start`` · ``StartStep`` · reasoning and text parts · ``ToolInputStart`` /
``ToolInputDelta`` per streamed tool call and ``ToolInputAvailable`` once the stream ended ·
``FinishStep`` · ``Finish``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from helix_stream.chunks import Chunk, Finish, FinishStep, Start, StartStep
from helix_stream.models._parse import StepParser, map_finish_reason

__all__ = ["is_litellm_chunk", "litellm_to_chunks", "map_finish_reason"]


def is_litellm_chunk(item: object) -> bool:
    """Whether ``item`` looks like a litellm streaming chunk rather than an internal chunk."""
    return hasattr(item, "choices")


async def litellm_to_chunks(first: Any, rest: AsyncIterator[Any]) -> AsyncIterator[Chunk]:
    """Turn a litellm stream (its first item already read) into internal chunks.

    Args:
        first: The stream's first item.
        rest: The stream's iterator, positioned after ``first``; it is closed (``aclose``)
            when this generator ends or is closed, so cancelling the consumer cancels the call.
    """
    parser = StepParser(0)
    yield Start()
    yield StartStep(step_number=0)
    try:
        item = first
        while True:
            for chunk in parser.feed(item):
                yield chunk
            try:
                item = await rest.__anext__()
            except StopAsyncIteration:
                break
        closing, _ = parser.finish()
        for chunk in closing:
            yield chunk
        reason = map_finish_reason(parser.finish_reason)
        usage = parser.usage
        yield FinishStep(
            step_number=0, finish_reason=reason, usage=usage, response_model=parser.response_model
        )
        yield Finish(finish_reason=reason, usage=usage)
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()
