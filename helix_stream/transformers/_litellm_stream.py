"""A raw ``litellm.acompletion(..., stream=True)`` stream as internal chunks.

This module owns :func:`litellm_to_chunks`: it reads litellm's ``ModelResponseStream`` objects
by attribute only (litellm is never imported here) and emits the internal chunk vocabulary of
:mod:`helix_stream.chunks` for one step, so that a single mapping to the AI SDK UI stream
serves both the generation loop and users who already stream with litellm:

``Start`` · ``StartStep`` · reasoning parts · text parts · ``ToolInputStart`` /
``ToolInputDelta`` per streamed tool call, and ``ToolInputAvailable`` once the stream ended ·
``FinishStep`` · ``Finish``.

What it reads from each item: ``choices[0].delta.reasoning_content``, ``.content``,
``.tool_calls`` (``index``; ``id`` and ``function.name`` on the first fragment of an index,
``function.arguments`` fragments after), ``choices[0].finish_reason`` and ``usage``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from helix_stream.chunks import (
    Chunk,
    Finish,
    FinishReason,
    FinishStep,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    Start,
    StartStep,
    TextDelta,
    TextEnd,
    TextStart,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    Usage,
)

__all__ = ["is_litellm_chunk", "litellm_to_chunks", "map_finish_reason"]

# OpenAI / litellm finish reasons -> the AI SDK's (ai-sdk-protocol.md, "Rules a server must
# keep"). Anything else, including a missing reason, is "other"; never "unknown".
_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "content_filter": "content-filter",
}


def map_finish_reason(reason: str | None) -> FinishReason:
    """Map an OpenAI-style finish reason (as litellm reports it) to the AI SDK's."""
    return _FINISH_REASONS.get(reason or "", "other")


def is_litellm_chunk(item: object) -> bool:
    """Whether ``item`` looks like a litellm streaming chunk rather than an internal chunk."""
    return hasattr(item, "choices")


class _ToolCall:
    __slots__ = ("arguments", "id", "name", "started")

    def __init__(self, call_id: str | None, name: str | None) -> None:
        self.id = call_id or f"call_{uuid.uuid4().hex[:24]}"
        self.name = name
        self.arguments: list[str] = []
        self.started = False


def _usage(raw: Any) -> Usage:
    def count(name: str) -> int:
        value = getattr(raw, name, 0)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=count("prompt_tokens"),
        output_tokens=count("completion_tokens"),
        total_tokens=count("total_tokens"),
    )


def _parse_arguments(text: str) -> Any:
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return text  # as ToolInputAvailable documents: the raw text when it did not parse


async def litellm_to_chunks(first: Any, rest: AsyncIterator[Any]) -> AsyncIterator[Chunk]:
    """Turn a litellm stream (its first item already read) into internal chunks.

    Args:
        first: The stream's first item.
        rest: The stream's iterator, positioned after ``first``; it is closed (``aclose``)
            when this generator ends or is closed, so cancelling the consumer cancels the call.
    """
    yield Start()
    yield StartStep(step_number=0)
    text_id: str | None = None
    reasoning_id: str | None = None
    parts = 0  # a counter that keeps text/reasoning part ids unique within the message
    calls: dict[int, _ToolCall] = {}
    finish_reason: str | None = None
    usage = Usage()
    model: str | None = None
    item = first
    try:
        while True:
            raw_usage = getattr(item, "usage", None)
            if raw_usage is not None:
                usage = _usage(raw_usage)
            model = getattr(item, "model", None) or model
            choices = item.choices
            if choices:
                choice = choices[0]
                delta = choice.delta
                if delta is not None:
                    reasoning = getattr(delta, "reasoning_content", None)
                    if reasoning:
                        if reasoning_id is None:
                            reasoning_id = f"reasoning-{parts}"
                            parts += 1
                            yield ReasoningStart(id=reasoning_id)
                        yield ReasoningDelta(id=reasoning_id, delta=reasoning)
                    content = getattr(delta, "content", None)
                    if content:
                        if reasoning_id is not None:
                            # Reasoning precedes the answer; a later reasoning burst is a new part.
                            yield ReasoningEnd(id=reasoning_id)
                            reasoning_id = None
                        if text_id is None:
                            text_id = f"text-{parts}"
                            parts += 1
                            yield TextStart(id=text_id)
                        yield TextDelta(id=text_id, delta=content)
                    tool_calls = getattr(delta, "tool_calls", None)
                    if tool_calls:
                        for fragment in tool_calls:
                            for chunk in _tool_fragment(calls, fragment):
                                yield chunk
                if choice.finish_reason:
                    finish_reason = choice.finish_reason
            try:
                item = await rest.__anext__()
            except StopAsyncIteration:
                break
        if reasoning_id is not None:
            yield ReasoningEnd(id=reasoning_id)
        if text_id is not None:
            yield TextEnd(id=text_id)
        for index in sorted(calls):
            call = calls[index]
            if call.name is None:
                continue  # a call without a name cannot be shown (nor run)
            yield ToolInputAvailable(
                tool_call_id=call.id,
                tool_name=call.name,
                input=_parse_arguments("".join(call.arguments)),
            )
        reason = map_finish_reason(finish_reason)
        yield FinishStep(step_number=0, finish_reason=reason, usage=usage, response_model=model)
        yield Finish(finish_reason=reason, usage=usage)
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()


def _tool_fragment(calls: dict[int, _ToolCall], fragment: Any) -> list[Chunk]:
    index = getattr(fragment, "index", None)
    if not isinstance(index, int):
        index = len(calls)
    function = getattr(fragment, "function", None)
    if function is None:  # a "custom" tool call: name and input instead of a function
        function = getattr(fragment, "custom", None)
        name = getattr(function, "name", None)
        arguments = getattr(function, "input", None)
    else:
        name = getattr(function, "name", None)
        arguments = getattr(function, "arguments", None)
    call = calls.get(index)
    if call is None:
        call = calls[index] = _ToolCall(getattr(fragment, "id", None), name)
    elif call.name is None and name:
        call.name = name
    out: list[Chunk] = []
    if not call.started and call.name:
        call.started = True
        out.append(ToolInputStart(tool_call_id=call.id, tool_name=call.name))
        if call.arguments:  # fragments that arrived before the name
            out.append(ToolInputDelta(tool_call_id=call.id, delta="".join(call.arguments)))
    if arguments:
        call.arguments.append(arguments)
        if call.started:
            out.append(ToolInputDelta(tool_call_id=call.id, delta=arguments))
    return out
