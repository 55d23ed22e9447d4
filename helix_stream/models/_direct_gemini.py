"""A Gemini ``streamGenerateContent`` stream read from its body (see :mod:`._direct_stream`).

For the ``gemini`` and ``vertex_ai`` providers litellm builds, authenticates and sends the
request itself (its own HTTP client), and reads the server-sent events with its Gemini iterator:
per event, a ``ModelResponseStream`` that litellm's wrapper then copies into a second one. The
request is made when the stream is first read: helix asks litellm's wrapper to make it
(``fetch_stream``), then reads the body of the response litellm got.

Read directly, each event is parsed once. The events that make up a long answer — one
candidate whose parts are text (``thought: true`` is reasoning), a finish reason, the usage so
far — become the fields :class:`~helix_stream.models._parse.StepParser` reads, as litellm's
iterator sets them (its finish-reason mapping; ``tool_calls`` once a call was seen). Any other
event — function calls, grounding, citations, safety ratings, a blocked prompt, inline data, a
thought signature, an ``error`` — is handed to litellm's own iterator (``chunk_parser``), in
order, and its chunk is passed on as it is: what litellm does not know raises as litellm raises
it, through the wrapper's error mapping.

Gemini repeats the usage so far on every event; only the last one counts. It is computed once,
at the end of the stream, by litellm's own iterator from that event's ``usageMetadata``.

A stream litellm continues over several requests (an output cap it splits) is left to
litellm's wrapper whole.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ._direct_stream import DirectStream, Fields, count_reasoning

__all__ = ["GeminiStream", "is_gemini_call"]

_MODULE = "litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini"
# Event and candidate fields the direct reader reads itself; any other sends the event to
# litellm's parser.
_EVENT_KEYS = frozenset({"candidates", "usageMetadata", "modelVersion", "responseId", "createTime"})
_CANDIDATE_KEYS = frozenset({"content", "finishReason", "index"})


def is_gemini_call(wrapper: Any) -> bool:
    """litellm's wrapper will make a Gemini ``streamGenerateContent`` call when first read."""
    call = getattr(wrapper, "make_call", None)
    return (
        getattr(wrapper, "completion_stream", True) is None
        and getattr(call, "__module__", None) == _MODULE
        and str(getattr(call, "__qualname__", "")).startswith("VertexLLM.async_streaming.")
    )


def _simple_parts(candidate: dict[str, Any]) -> tuple[str, str] | None:
    """(text, reasoning) of a candidate of text parts only; ``None`` for anything else."""
    if not _CANDIDATE_KEYS.issuperset(candidate):
        return None
    content = candidate.get("content")
    if content is None:
        return "", ""
    parts = content.get("parts") if content.__class__ is dict else None
    if parts.__class__ is not list:
        return None
    text, reasoning = "", ""
    for part in parts:
        if part.__class__ is not dict or part.keys() - {"text", "thought"}:
            return None
        value = part.get("text")
        if value.__class__ is not str or value.startswith("data:"):
            return None  # audio as a data URI: litellm drops it
        if part.get("thought") is True:
            reasoning += value
        elif "thought" in part and part["thought"] is not False:
            return None
        else:
            text += value
    return text, reasoning


class GeminiStream(DirectStream):
    """The chunks of one Gemini stream, read from the HTTP body."""

    _eof_is_error = False

    def __init__(self, litellm: Any, wrapper: Any) -> None:
        super().__init__(litellm, wrapper)
        self._iterator_of_litellm: Any = None
        self._usage_event: dict[str, Any] | None = None  # the last usage, not yet computed
        self._usage: Any = None  # or computed by litellm
        self._reasoning: list[str] = []

    async def _open(self) -> Any:
        await self._wrapper.fetch_stream()
        iterator = self._wrapper.completion_stream
        response = getattr(iterator, "response", None)
        kind = type(iterator)
        if (
            kind.__name__ != "ModelResponseIterator"
            or kind.__module__ != _MODULE
            or getattr(iterator, "_output_cap", True) is not None
            or getattr(iterator, "chunk_type", None) != "valid_json"
            or not hasattr(response, "aiter_bytes")
        ):
            return None
        self._iterator_of_litellm = iterator
        return response

    def _parse(self, data: bytes) -> Any:
        if self._iterator_of_litellm.chunk_type != "valid_json":
            # litellm's iterator is joining pieces of a JSON value cut across events: every
            # event from here on is litellm's to read.
            return self._litellms(data.decode(errors="replace"))
        try:
            event = json.loads(data)
        except ValueError:
            event = None
        if event.__class__ is not dict:
            return self._litellms(data.decode(errors="replace"))
        candidates = event.get("candidates")
        if (
            not _EVENT_KEYS.issuperset(event)
            or candidates.__class__ is not list
            or len(candidates) != 1
            or candidates[0].__class__ is not dict
        ):
            return self._litellms(event)
        read = _simple_parts(candidates[0])
        if read is None or candidates[0].get("index", 0) != 0:
            return self._litellms(event)
        if "usageMetadata" in event:
            self._usage_event, self._usage = event, None
        text, reasoning = read
        delta: dict[str, Any] = {}
        if text:
            delta["content"] = text
        if reasoning:
            delta["reasoning_content"] = reasoning
            self._reasoning.append(reasoning)
        choice: dict[str, Any] = {"delta": Fields(delta)}
        native = candidates[0].get("finishReason")
        if native is not None:
            choice["finish_reason"] = self._finish(native)
        elif not delta:
            return None
        return Fields({"choices": [Fields(choice)], "id": event.get("responseId")})

    def _finish(self, native: Any) -> Any:
        """litellm's finish reason: ``tool_calls`` once its parser saw a call."""
        self._finished = True
        if self._iterator_of_litellm.has_seen_tool_calls:
            return "tool_calls"
        return sys.modules[_MODULE].VertexGeminiConfig.check_finish_reason(None, native)

    def _litellms(self, event: Any) -> Any:
        """litellm's own chunk for an event the direct reader does not read itself."""
        iterator = self._iterator_of_litellm
        if isinstance(event, str):  # not a JSON object: litellm's accumulating parser
            return self._kept(iterator._common_chunk_parsing_logic(event))
        return self._kept(iterator.chunk_parser(event))

    def _kept(self, chunk: Any) -> Any:
        """litellm's chunk, noted: its finish reason and reasoning; its usage kept for the end."""
        if chunk is None:
            return None
        usage = getattr(chunk, "usage", None)
        if usage is not None:  # the latest usage, litellm's: kept for the end
            self._usage_event, self._usage = None, usage
            chunk.usage = None
        for choice in chunk.choices:
            if choice.finish_reason:
                self._finished = True
            reasoning = getattr(choice.delta, "reasoning_content", None)
            if isinstance(reasoning, str) and reasoning:
                self._reasoning.append(reasoning)
        return chunk

    def _end(self) -> list[Any]:
        """What litellm's iterator still holds, then the usage, once: litellm's figures from
        the last ``usageMetadata``."""
        out: list[Any] = []
        iterator = self._iterator_of_litellm
        if iterator.chunk_type == "accumulated_json" and iterator.accumulated_json:
            rest = self._kept(iterator.handle_accumulated_json_chunk(chunk="", is_final=True))
            out += [rest] if rest is not None else []
        usage, event = self._usage, self._usage_event
        if event is not None:
            last = {k: v for k, v in event.items() if k != "candidates"}
            usage = self._iterator_of_litellm.chunk_parser(last).usage
        if usage is None:
            return out
        count_reasoning(self._litellm, usage, self._reasoning)
        return [*out, Fields({"choices": [], "usage": usage})]
