"""An Anthropic Messages stream read from its body (see :mod:`._direct_stream`).

For the ``anthropic`` provider litellm sends the request itself (its own HTTP client, its own
headers and body: prompt-cache markers included) and reads the answer with its Messages
iterator: per event, a typed dict validated into an OpenAI-shaped ``ModelResponseStream``, which
litellm's wrapper then copies into a second one. Read directly, each event is parsed once into
the fields :class:`~helix_stream.models._parse.StepParser` reads, as litellm's iterator and
wrapper would have set them:

* ``message_start`` gives the usage so far (input and cache counters); ``message_delta`` the
  stop reason (``end_turn`` is ``stop``, ``max_tokens`` ``length``, ``tool_use``
  ``tool_calls``: litellm's own mapping) and the usage, merged as litellm merges it and computed
  by litellm's own ``AnthropicConfig.calculate_usage`` (prompt tokens include the cache reads and
  writes; reasoning tokens are counted from the thinking text);
* ``content_block_start``/``_delta``/``_stop``: ``text`` and ``text_delta`` are text;
  ``thinking_delta`` is reasoning (a ``signature_delta`` and a ``redacted_thinking`` block carry
  no text); a ``tool_use`` block is a tool call, its ``input_json_delta`` pieces the arguments
  (an input that streamed as nothing but empty pieces is ``{}``); a ``citations_delta`` is a
  citation (a source, when it has a URL); server tools' blocks are the provider's own business;
* ``ping`` and ``message_stop`` carry nothing; ``error`` raises what litellm's iterator raises
  (an ``AnthropicError``, status 500), through the wrapper's error mapping;
* the body's end before a ``message_delta`` is the error litellm's wrapper raises ("Stream
  ended before a finish_reason was received"); a read error after it is not.

The response id is the one litellm's iterator made for the stream; the model name is the one
litellm puts on its chunks. Two things litellm's iterator drops are kept on the stream for the
cache ledger (``_cache_book.py``): the answer's own id (``message_id``, Anthropic's ``msg_...``)
and its cache ``diagnostics`` (``cache_diagnostics``), read from ``message_start``'s message or
from a ``message_delta``, whichever carries them (the last one wins).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ._direct_stream import DirectStream, Fields

__all__ = ["AnthropicStream", "anthropic_response"]

_COMMON = "litellm.llms.anthropic.common_utils"


def anthropic_response(iterator: Any) -> Any:
    """The HTTP response of litellm's unread Anthropic iterator, where litellm would read the
    events as they are (no JSON mode, no ``response_format`` tool, no renamed tools)."""
    kind = type(iterator)
    if (
        kind.__name__ != "ModelResponseIterator"
        or not kind.__module__.startswith("litellm.llms.anthropic.")
        or getattr(iterator, "sync_stream", True)
        or getattr(iterator, "json_mode", True)
        or getattr(iterator, "response_format_schema", None) is not None
        or getattr(iterator, "tool_name_reverse_map", None)
        or hasattr(iterator, "async_response_iterator")  # already iterated
    ):
        return None
    return getattr(iterator, "_response", None)


def _object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a shape litellm would not read)."""
    return value if isinstance(value, dict) else {}


def _delta(**values: Any) -> Fields:
    return Fields({"choices": [Fields({"delta": Fields(values)})]})


def _call(index: int, arguments: str, call_id: Any = None, name: Any = None) -> Fields:
    function = Fields({"name": name, "arguments": arguments})
    return _delta(tool_calls=[Fields({"index": index, "id": call_id, "function": function})])


class AnthropicStream(DirectStream):
    """The chunks of one Anthropic Messages stream, read from the HTTP body."""

    def __init__(self, litellm: Any, wrapper: Any, response: Any) -> None:
        super().__init__(litellm, wrapper, response)
        iterator = wrapper.completion_stream
        self._handler = type(iterator).__module__  # litellm's Messages iterator module
        self._speed = getattr(iterator, "speed", None)
        self._first["id"] = getattr(iterator, "response_id", None)
        self._usage: dict[str, Any] = {}
        self._reasoning: list[str] = []
        self._block: Any = None  # the type of the content block being streamed
        self._tool_index = -1
        self._json_pieces: list[str] | None = None  # a tool_use block's input, so far
        self._called = False
        self.message_id: str | None = None
        self.cache_diagnostics: dict[str, Any] | None = None
        self._dispatch = {
            "content_block_delta": self._block_delta,
            "content_block_start": self._block_start,
            "content_block_stop": self._block_stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "error": self._error,
        }

    def _parse(self, data: bytes) -> Fields | None:
        event = json.loads(data)
        if not isinstance(event, dict):
            return None
        read = self._dispatch.get(event.get("type"))  # type: ignore[arg-type]
        return read(event) if read is not None else None

    def _block_delta(self, event: dict[str, Any]) -> Fields | None:
        delta = _object(event.get("delta"))
        if "text" in delta:
            return _delta(content=delta["text"])
        if "partial_json" in delta:
            if self._block != "tool_use":
                return None
            piece = delta["partial_json"]
            if self._json_pieces is not None:
                self._json_pieces.append(piece)
            return _call(self._tool_index, piece)
        if "citation" in delta:
            return _delta(provider_specific_fields={"citation": delta["citation"]})
        thinking = delta.get("thinking")
        if isinstance(thinking, str) and thinking:
            self._reasoning.append(thinking)
            return _delta(reasoning_content=thinking)
        return None

    def _block_start(self, event: dict[str, Any]) -> Fields | None:
        block = _object(event.get("content_block"))
        self._block = kind = block.get("type")
        self._json_pieces = None
        if kind == "text":
            text = block.get("text")
            return _delta(content=text) if text else None
        if kind == "tool_use":
            self._tool_index += 1
            self._called = True
            self._json_pieces = []
            return _call(self._tool_index, "", block.get("id"), block.get("name"))
        return None

    def _block_stop(self, event: dict[str, Any]) -> Fields | None:
        pieces, self._json_pieces, self._block = self._json_pieces, None, None
        if pieces and not "".join(pieces):  # litellm's check_empty_tool_call_args
            return _call(self._tool_index, "{}")
        return None

    def _diagnostics(self, value: Any) -> None:
        if isinstance(value, dict):
            self.cache_diagnostics = value

    def _message_start(self, event: dict[str, Any]) -> Fields | None:
        message = _object(event.get("message"))
        answer_id = message.get("id")
        self.message_id = answer_id if isinstance(answer_id, str) else None
        self._diagnostics(message.get("diagnostics"))
        usage = message.get("usage")
        if not isinstance(usage, dict):
            return Fields({})
        self._usage = {**self._usage, **usage}
        return Fields({"usage": self._usage_now()})

    def _message_delta(self, event: dict[str, Any]) -> Fields | None:
        delta = _object(event.get("delta"))
        self._diagnostics(event.get("diagnostics") or delta.get("diagnostics"))
        reason = self._module().map_finish_reason(finish_reason=delta.get("stop_reason") or "stop")
        self._finished = True
        # A refusal's explanation (``stop_details``), as litellm's iterator gives it: a refusal.
        said = sys.modules[_COMMON].refusal_params(delta) if delta.get("stop_reason") else {}
        fields: dict[str, Any] = {
            "choices": [
                Fields({"delta": Fields(dict(said)), "finish_reason": self._tool_finish(reason)})
            ]
        }
        usage = event.get("usage")
        if isinstance(usage, dict):
            self._usage = {**self._usage, **usage}
            fields["usage"] = self._usage_now()
        return Fields(fields)

    def _error(self, event: dict[str, Any]) -> Fields | None:
        message = _object(event.get("error")).get("message")
        raise self._module().AnthropicError(message=message or str(event), status_code=500)

    def _module(self) -> Any:
        return sys.modules[self._handler]

    def _usage_now(self) -> Any:
        return (
            self._module()
            .AnthropicConfig()
            .calculate_usage(
                usage_object=self._usage,
                reasoning_content="".join(self._reasoning) if self._reasoning else None,
                speed=self._speed,
            )
        )

    def _tool_finish(self, reason: str) -> str:
        return "tool_calls" if reason == "stop" and self._called else reason
