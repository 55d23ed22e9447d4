"""Stream transforms (``transform=``, the AI SDK's ``experimental_transform``) and
:func:`smooth_stream`.

A transform is an async generator function over the run's chunks: it receives the chunk
stream and yields chunks. The loop applies a run's transforms in order, after the loop itself
and before every consumer: ``on_chunk``, the result (``text()``, ``steps()``), the UI message
stream and the session's live stream all see the transformed chunks. What the loop keeps for
itself (the steps, the stored log, telemetry) is read from the model's output, not from the
transformed stream: a transform changes what is shown, not what was said.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

from .chunks import Chunk, ReasoningDelta, TextDelta
from .errors import InvalidRequestError

__all__ = ["StreamTransform", "aclose_stream", "apply_transforms", "as_transforms", "smooth_stream"]

StreamTransform = Callable[[AsyncIterator[Chunk]], AsyncIterator[Chunk]]
"""``transform(stream)``: an async generator function from chunks to chunks."""

_CHUNKING = {"word": re.compile(r"\S+\s+"), "line": re.compile(r"\n+")}


def as_transforms(value: Any) -> tuple[StreamTransform, ...]:
    """``transform=``'s value as a tuple (one function or a list of them).

    Raises:
        InvalidRequestError: something that is not callable.
    """
    if value is None:
        return ()
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    for item in items:
        if not callable(item):
            raise InvalidRequestError(
                "transform= takes an async generator function over the chunk stream (or a "
                f"list of them), such as hs.smooth_stream(), not {type(item).__name__}."
            )
    return items


def apply_transforms(
    stream: AsyncIterator[Chunk], transforms: Sequence[StreamTransform]
) -> AsyncIterator[Chunk]:
    """``stream`` through each transform in order (the first sees the loop's chunks)."""
    for transform in transforms:
        stream = transform(stream)
    return stream


def smooth_stream(
    *,
    delay: float | None = 0.01,
    chunking: Literal["word", "line"] | str | re.Pattern[str] = "word",
) -> StreamTransform:
    """A transform that re-chunks text and reasoning deltas for an even pace.

    Each text or reasoning delta is cut into pieces (a word with the spaces after it, a run of
    line breaks, or a match of your own pattern), sent one by one ``delay`` seconds apart.
    What is left over waits for the next delta of the same part, and goes out before any other
    chunk: chunks of other types are never reordered, and the text is unchanged.

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Hi",
                                transform=hs.smooth_stream(delay=0.02, chunking="line"))

    Args:
        delay: Seconds between two pieces (``None`` or ``0``: no wait).
        chunking: ``"word"``, ``"line"``, or a regular expression (a string or compiled) whose
            match ends a piece.

    Raises:
        InvalidRequestError: an unknown ``chunking`` or a negative ``delay``.
    """
    pattern = _pattern(chunking)
    if delay is not None and delay < 0:
        raise InvalidRequestError(f"smooth_stream(delay=) must be >= 0, not {delay!r}.")
    wait = delay or 0.0

    async def smooth(stream: AsyncIterator[Chunk]) -> AsyncIterator[Chunk]:
        held: TextDelta | ReasoningDelta | None = None  # the part's text not yet sent
        async for chunk in stream:
            cls = chunk.__class__
            if cls is not TextDelta and cls is not ReasoningDelta:
                if held is not None:
                    yield held
                    held = None
                yield chunk
                continue
            assert isinstance(chunk, (TextDelta, ReasoningDelta))
            if held is not None and (held.__class__ is not cls or held.id != chunk.id):
                yield held
                held = None
            text = chunk.delta if held is None else held.delta + chunk.delta
            start = 0
            for match in pattern.finditer(text):
                if match.end() == start:
                    continue  # an empty match cuts nothing
                yield replace(chunk, delta=text[start : match.end()])
                start = match.end()
                if wait:
                    await asyncio.sleep(wait)
            held = replace(chunk, delta=text[start:]) if start < len(text) else None
        if held is not None:
            yield held

    return smooth


def _pattern(chunking: Any) -> re.Pattern[str]:
    if isinstance(chunking, re.Pattern):
        return chunking
    if chunking in _CHUNKING:
        return _CHUNKING[chunking]
    if isinstance(chunking, str):
        try:
            return re.compile(chunking)
        except re.error as exc:
            raise InvalidRequestError(f"smooth_stream(chunking=): {exc}") from exc
    raise InvalidRequestError(
        f'smooth_stream(chunking=) takes "word", "line" or a regex, not {chunking!r}.'
    )


async def aclose_stream(stream: Any) -> None:
    """Close ``stream`` when it can be closed (a transform's generator)."""
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
