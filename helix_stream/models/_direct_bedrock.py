"""A Bedrock ConverseStream answer read from its body (see :mod:`._direct_stream`).

For Bedrock's Converse API litellm builds, signs (SigV4, or a bearer API key) and sends the
request itself; the answer is an AWS event stream (``application/vnd.amazon.eventstream``):
binary frames, each with headers (``:message-type``, ``:event-type``) and a JSON payload.
litellm reads it with botocore's ``EventStreamBuffer``, runs each frame through botocore's
response parser, decodes the JSON and builds a ``ModelResponseStream``, which its wrapper then
copies into a second one.

Read directly, frames come from the same botocore ``EventStreamBuffer`` (its prelude and
message CRC checks included: no framing code here), and a ``contentBlockDelta`` event whose
delta is text or reasoning text — the events that make up a long answer — becomes the fields
:class:`~helix_stream.models._parse.StepParser` reads, as litellm's decoder sets them. Every
other frame (block starts and stops, tool input, signatures, redacted reasoning, citations,
the stop reason, the usage, an exception, an event type this module does not know) goes to
litellm's own decoder, in order, and its chunk is passed on as it is; litellm's decoder also
keeps its own count of the body (a body that is not an event stream is litellm's error).

The usage arrives in the last event; reasoning tokens Bedrock did not report are counted from
the reasoning text once, at the end, as litellm's stream builder counts them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from ._direct_stream import DirectStream, Fields, count_reasoning

__all__ = ["BedrockStream", "bedrock_parts"]

_MODULE = "litellm.llms.bedrock.chat.invoke_handler"


def bedrock_parts(stream: Any) -> tuple[Any, Any] | None:
    """(litellm's Converse decoder, the HTTP response) of an unread Converse stream.

    litellm's Converse stream is its decoder's ``aiter_bytes`` async generator over the
    response's bytes, not started yet; its arguments name both. ``None`` for anything else (an
    Invoke model's decoder, JSON mode, a stream already read).
    """
    frame = getattr(stream, "ag_frame", None)
    code = getattr(stream, "ag_code", None)
    if frame is None or getattr(code, "co_name", None) != "aiter_bytes" or stream.ag_running:
        return None
    args = frame.f_locals
    decoder, body = args.get("self"), args.get("iterator")
    kind = type(decoder)
    inner = getattr(body, "ag_frame", None)
    response = inner.f_locals.get("self") if inner is not None else None
    if (
        kind.__name__ != "AWSEventStreamDecoder"
        or kind.__module__ != _MODULE
        or getattr(decoder, "json_mode", True)
        or "event_stream_buffer" in args  # started: its first line sets it
        or not hasattr(response, "aiter_bytes")
    ):
        return None
    return decoder, response


def _generic(chunk: dict[str, Any]) -> Fields | None:
    """litellm's generic chunk (``GChunk``: ``messageStart``, say) as its wrapper reads it."""
    text, reason = chunk.get("text"), chunk.get("finish_reason")
    if not text and not (chunk.get("is_finished") and reason):
        return None
    choice: dict[str, Any] = {"delta": Fields({"content": text or None})}
    if chunk.get("is_finished") and reason:
        choice["finish_reason"] = reason
    return Fields({"choices": [Fields(choice)]})


class BedrockStream(DirectStream):
    """The chunks of one Bedrock ConverseStream answer, read from the HTTP body."""

    _eof_is_error = False

    def __init__(self, litellm: Any, wrapper: Any, decoder: Any, response: Any) -> None:
        super().__init__(litellm, wrapper, response)
        from botocore.eventstream import EventStreamBuffer

        module = sys.modules[_MODULE]
        self._decoder = decoder
        self._buffer = EventStreamBuffer()
        self._tally = module._EventStreamTally(module.get_bedrock_stream_event_statuses())
        self._reasoning: list[str] = []
        self._usage: Any = None

    def _feed(self, block: bytes) -> Iterator[Any]:
        self._buffer.add_data(block)
        self._tally.add_chunk(block)
        for event in self._buffer:
            headers = event.headers
            self._tally.add_event(event, headers)
            chunk = None
            if headers.get(":event-type") == "contentBlockDelta" and (
                headers.get(":message-type") == "event"
            ):
                chunk = self._delta(event.payload)
            yield self._litellms(event) if chunk is None else chunk

    def _delta(self, payload: bytes) -> Fields | None:
        """A text or reasoning-text delta; ``None`` for any other (litellm reads it)."""
        try:
            data = json.loads(payload)
        except ValueError:
            return None  # litellm's decoder reads it (and raises what it raises)
        delta = data.get("delta") if data.__class__ is dict else None
        if delta.__class__ is not dict or len(delta) != 1:
            return None
        decoder = self._decoder
        if decoder.response_id is None:
            decoder._initialize_converse_response_id(data)
        text = delta.get("text")
        if text.__class__ is str:
            values: dict[str, Any] = {"content": text, "role": None}
        else:
            reasoning = delta.get("reasoningContent")
            if reasoning.__class__ is not dict or reasoning.keys() != {"text"}:
                return None
            text = reasoning["text"]
            if text.__class__ is not str:
                return None
            # litellm's decoder state: its thinking block numbering and "thinking ran"
            index = data.get("contentBlockIndex", 0)
            decoder._thinking_block_index_for(index if index.__class__ is int else 0)
            decoder._thinking_ran = True
            self._reasoning.append(text)
            values = {"content": "", "reasoning_content": text}
        return Fields({"choices": [Fields({"delta": Fields(values)})], "id": decoder.response_id})

    def _litellms(self, event: Any) -> Any:
        """litellm's own chunk for a frame the direct reader does not read itself."""
        message = self._decoder._parse_message_from_event(event)
        if not message:
            return None
        chunk = self._decoder.chunk_parser(chunk_data=json.loads(message))
        if isinstance(chunk, dict):  # litellm's generic chunk: a payload Converse does not name
            return _generic(chunk)
        choices = getattr(chunk, "choices", None)
        if choices:
            if choices[0].finish_reason:
                self._finished = True
            reasoning = getattr(choices[0].delta, "reasoning_content", None)
            if isinstance(reasoning, str) and reasoning:
                self._reasoning.append(reasoning)
        usage = getattr(chunk, "usage", None)
        if usage is not None:  # counted at the end, with the whole reasoning text
            self._usage, chunk.usage = usage, None
        return chunk

    def _end(self) -> list[Any]:
        failed = self._tally.undecoded_stream_error(self._response.headers)
        if failed is not None:
            self._fail(failed)
        if self._usage is None:
            return []
        count_reasoning(self._litellm, self._usage, self._reasoning)
        return [Fields({"choices": [], "usage": self._usage})]
