"""An OpenAI chat-completions stream read from its body (see :mod:`._direct_stream`).

For the ``openai`` provider (OpenAI, and any OpenAI-compatible server behind ``openai/`` and
an ``api_base``), litellm sends the request through the OpenAI SDK; per chunk, the SDK builds
a pydantic model from the JSON and litellm's wrapper builds a second one from that. Read
directly, each ``chat.completion.chunk`` is parsed once and its objects are read as attributes.

Kept as litellm's wrapper does it:

* ``reasoning`` is read as ``reasoning_content``;
* reasoning tokens the provider did not report are counted from the reasoning text;
* usage the provider did not send at all is estimated at the end of the stream, once, by
  litellm's own builder (``litellm.stream_chunk_builder``, which counts with
  ``litellm.token_counter``) from the assembled answer: the figures litellm's wrapper reports;
* a clean end without a finish reason is an error; a read error after the finish reason is
  not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._direct_stream import DirectStream, Fields, count_reasoning

__all__ = ["OpenAIStream"]


def _chunk(data: dict[str, Any]) -> Fields:
    """One ``chat.completion.chunk`` object, with the nested objects the parser reads."""
    choices = data.get("choices")
    # Only objects are read: anything else where a choice belongs carries nothing readable.
    data["choices"] = (
        [_choice(c) for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []
    )
    return Fields(data)


def _choice(choice: dict[str, Any]) -> Fields:
    delta = choice.get("delta")
    if isinstance(delta, dict):
        reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and delta.get("reasoning_content") is None:
            delta["reasoning_content"] = reasoning
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [_call(c) for c in calls if isinstance(c, dict)]
        choice["delta"] = Fields(delta)
    return Fields(choice)


def _call(call: dict[str, Any]) -> Fields:
    for key in ("function", "custom"):
        if isinstance(call.get(key), dict):
            call[key] = Fields(call[key])
    return Fields(call)


@dataclass(slots=True)
class _Answer:
    """What the stream said, kept for an estimate of the usage the provider did not send."""

    id: Any = None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, list[Any]] = field(default_factory=dict)  # index: [id, name, arguments]
    finish_reason: Any = None
    usage: bool = False

    def add(self, delta: dict[str, Any]) -> None:
        """Keep a delta's text, reasoning and tool-call fragments (its parsed fields)."""
        content = delta.get("content")
        if content.__class__ is str and content:
            self.text.append(content)
        reasoning = delta.get("reasoning_content")
        if reasoning.__class__ is str and reasoning:
            self.reasoning.append(reasoning)
        calls = delta.get("tool_calls")
        if calls:
            self._add_calls(calls)

    def _add_calls(self, calls: list[Fields]) -> None:
        for position, call in enumerate(calls):
            values = call.__dict__
            index = values.get("index")
            kept = self.calls.setdefault(
                index if isinstance(index, int) else position, [None, "", ""]
            )
            function = values.get("function")
            function = function.__dict__ if isinstance(function, Fields) else {}
            kept[0] = kept[0] or values.get("id")
            if isinstance(function.get("name"), str):
                kept[1] = kept[1] or function["name"]
            if isinstance(function.get("arguments"), str):
                kept[2] += function["arguments"]


class OpenAIStream(DirectStream):
    """The chunks of one OpenAI chat-completions stream, read from the HTTP body."""

    def __init__(self, litellm: Any, wrapper: Any, response: Any) -> None:
        super().__init__(litellm, wrapper, response)
        self._answer = _Answer()

    def _parse(self, data: bytes) -> Fields | None:
        value = json.loads(data)
        if not isinstance(value, dict):
            return None
        error = value.get("error")
        if error:
            import openai  # loaded with litellm

            message = error.get("message") if isinstance(error, Mapping) else None
            if not isinstance(message, str) or not message:
                message = "An error occurred during streaming"
            raise openai.APIError(message=message, request=self._response.request, body=error)
        chunk = _chunk(value)
        self._read(chunk)
        return chunk

    def _read(self, chunk: Fields) -> None:
        """Note the finish reason, keep the answer, count unreported reasoning tokens."""
        fields, answer = chunk.__dict__, self._answer
        if answer.id is None:
            answer.id = fields.get("id")
        choices = fields["choices"]
        if choices:
            choice = choices[0].__dict__
            if choice.get("finish_reason"):
                self._finished = True
                answer.finish_reason = choice["finish_reason"]
            delta = choice.get("delta")
            if delta.__class__ is Fields:
                answer.add(delta.__dict__)
        usage = fields.get("usage")
        if usage.__class__ is dict:
            answer.usage = True
            count_reasoning(self._litellm, usage, self._answer.reasoning)

    def _end(self) -> list[Fields]:
        if self._answer.usage:
            return []
        return [Fields({"choices": [], "usage": self._estimated_usage()})]

    def _estimated_usage(self) -> Any:
        """litellm's estimate, from its builder fed the answer in two chunks."""
        types = self._litellm.types.utils
        answer = self._answer
        calls = [
            types.ChatCompletionDeltaToolCall(
                index=index,
                id=call_id,
                type="function",
                function=types.Function(name=name, arguments=arguments),
            )
            for index, (call_id, name, arguments) in sorted(answer.calls.items())
        ]
        delta = types.Delta(
            role="assistant",
            content="".join(answer.text) or None,
            reasoning_content="".join(answer.reasoning) or None,
            tool_calls=calls or None,
        )
        base = {"id": answer.id or "chatcmpl-direct", "model": self._first["model"]}
        head = types.ModelResponseStream(
            **base, choices=[types.StreamingChoices(index=0, delta=delta)]
        )
        head._hidden_params = dict(self._first["_hidden_params"])
        tail = types.ModelResponseStream(
            **base,
            choices=[
                types.StreamingChoices(
                    index=0, delta=types.Delta(), finish_reason=answer.finish_reason
                )
            ],
        )
        built = self._litellm.stream_chunk_builder(
            chunks=[head, tail],
            messages=getattr(self._wrapper, "messages", None),
            logging_obj=getattr(self._wrapper, "logging_obj", None),
        )
        return getattr(built, "usage", None)
