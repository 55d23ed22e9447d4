"""Reads an OpenAI chat-completions stream from its HTTP body, where nothing else can tell.

For the ``openai`` provider (OpenAI, and any OpenAI-compatible server behind ``openai/`` and an
``api_base``), litellm sends the request through the OpenAI SDK and returns a
``CustomStreamWrapper`` over the SDK's stream. Per chunk, the SDK builds a pydantic model from
the JSON and litellm builds a second one from that: most of a serving process's CPU on a long
answer, and most of the work between a response's head and its first text. Measured in
``bench/bench_serving.py`` (README, "Performance").

When nothing can read litellm's copy of the chunks — :func:`direct_stream` says when — helix
reads the server-sent events itself: one ``json.loads`` per event, fields read as attributes,
as :class:`~helix_stream.models._parse.StepParser` reads litellm's chunks. litellm still builds,
sends and times the request and maps its errors: a failure while reading goes through the
wrapper's own error mapping, so the caller sees the exception litellm would have raised.

Kept as litellm does it: ``reasoning`` read as ``reasoning_content``; reasoning tokens the
provider did not report counted from the reasoning text; the model name and the
``custom_llm_provider`` / ``api_base`` / ``model_id`` hidden params on the first chunk; a clean
end without a finish reason is an error; a read error after the finish reason is not.

Whether anything reads litellm's chunks is decided when the stream opens: a callback
registered while it streams sees the calls that start after it.

It receives the litellm module and litellm's stream as arguments: only ``_litellm.py`` imports
litellm.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from types import ModuleType
from typing import Any

__all__ = ["DirectStream", "direct_stream", "is_openai_stream"]

# Call parameters that change what litellm's wrapper makes of the chunks.
_WRAPPER_PARAMS = frozenset(
    {"merge_reasoning_content_in_choices", "n", "logprobs", "mock_response"}
)


class _Fields:
    """A JSON object read as attributes: its ``__dict__`` is the parsed object itself."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__ = values

    def __repr__(self) -> str:
        return f"_Fields({self.__dict__!r})"


def _chunk(data: dict[str, Any]) -> _Fields:
    """One ``chat.completion.chunk`` object, with the nested objects the parser reads."""
    choices = data.get("choices")
    if isinstance(choices, list):
        data["choices"] = [_choice(c) for c in choices if isinstance(c, dict)]
    return _Fields(data)


def _choice(choice: dict[str, Any]) -> _Fields:
    delta = choice.get("delta")
    if isinstance(delta, dict):
        reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and delta.get("reasoning_content") is None:
            delta["reasoning_content"] = reasoning
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [_call(c) for c in calls if isinstance(c, dict)]
        choice["delta"] = _Fields(delta)
    return _Fields(choice)


def _call(call: dict[str, Any]) -> _Fields:
    for key in ("function", "custom"):
        if isinstance(call.get(key), dict):
            call[key] = _Fields(call[key])
    return _Fields(call)


class _Events:
    """Server-sent events from a body's bytes: :meth:`feed` returns each complete event's data.

    Lines end with LF or CRLF, a blank line ends an event, and an event's ``data:`` lines are
    joined with LF; ``event:``, ``id:``, ``retry:`` and comments carry nothing a chat completion
    needs. State is kept across blocks: a line or an event may be cut anywhere. A ``[DONE]``
    event ends the stream: it sets :attr:`done`, and nothing after it is returned.
    """

    __slots__ = ("_data", "_rest", "done")

    def __init__(self) -> None:
        self._rest = b""
        self._data: list[bytes] = []
        self.done = False

    def feed(self, block: bytes) -> list[bytes]:
        *lines, self._rest = (self._rest + block).split(b"\n")
        out: list[bytes] = []
        for line in lines:
            if line.endswith(b"\r"):
                line = line[:-1]
            if line.startswith(b"data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(b" ") else value)
            elif not line and self._data:
                data, self._data = b"\n".join(self._data), []
                if data.startswith(b"[DONE]"):
                    self.done = True
                    break
                out.append(data)
        return out


class DirectStream:
    """The chunks of one OpenAI chat-completions stream, read from the HTTP body.

    Iterate it like litellm's stream; :meth:`aclose` closes the response.
    """

    def __init__(self, litellm: ModuleType, wrapper: Any, response: Any) -> None:
        self._litellm = litellm
        self._wrapper = wrapper
        self._response = response
        self._reasoning: list[str] = []
        self._hidden = {
            **(getattr(wrapper, "_hidden_params", None) or {}),
            "custom_llm_provider": getattr(wrapper, "custom_llm_provider", None),
        }
        # The model name litellm puts on its chunks (the requested one, not the provider's).
        self._model = getattr(wrapper, "_cached_model_name", None) or getattr(
            wrapper, "model", None
        )
        self._iterator = self._chunks()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterator

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    async def aclose(self) -> None:
        await self._iterator.aclose()
        await self._response.aclose()

    async def _chunks(self) -> AsyncGenerator[Any, None]:
        events, first, finished = _Events(), True, False
        try:
            async for block in self._response.aiter_bytes():
                for data in events.feed(block):
                    chunk = self._parse(data)
                    if chunk is None:
                        continue
                    if first:  # what litellm's first chunk says about the response
                        first = False
                        chunk.__dict__.update(_hidden_params=self._hidden, model=self._model)
                    finished = finished or _finishes(chunk)
                    self._count_reasoning(chunk)
                    yield chunk
                if events.done:
                    break
        except Exception as exc:
            if finished and _is_read_error(exc):
                return
            self._fail(exc)
        if not finished:
            import httpx  # loaded with litellm

            ended = "Stream ended before a finish_reason was received"  # litellm's words
            self._fail(httpx.RemoteProtocolError(ended))

    def _parse(self, data: bytes) -> _Fields | None:
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
        return _chunk(value)

    def _count_reasoning(self, chunk: _Fields) -> None:
        """Reasoning tokens the provider did not count, counted as litellm counts them."""
        fields = chunk.__dict__
        choices = fields.get("choices")
        delta = choices[0].__dict__.get("delta") if choices else None
        reasoning = delta.__dict__.get("reasoning_content") if delta is not None else None
        if isinstance(reasoning, str) and reasoning:
            self._reasoning.append(reasoning)
        usage = fields.get("usage")
        if not self._reasoning or not isinstance(usage, dict):
            return
        details = usage.get("completion_tokens_details")
        if isinstance(details, dict) and details.get("reasoning_tokens") is not None:
            return
        counted = self._litellm.token_counter(
            text="".join(self._reasoning), count_response_tokens=True
        )
        completion = usage.get("completion_tokens")
        capped = min(max(0, counted), completion if isinstance(completion, int) else 0)
        usage["completion_tokens_details"] = {**(details or {}), "reasoning_tokens": capped}

    def _fail(self, exc: Exception) -> None:
        """Raise what litellm's wrapper raises for ``exc`` (its own mapping, when it has one)."""
        handle = getattr(self._wrapper, "_handle_stream_fallback_error", None)
        if handle is not None:
            handle(exc)
        raise exc


def _finishes(chunk: _Fields) -> bool:
    choices: list[_Fields] = chunk.__dict__.get("choices") or []
    return bool(choices) and bool(choices[0].__dict__.get("finish_reason"))


def _is_read_error(exc: BaseException) -> bool:
    import httpx  # loaded with litellm

    return isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError))


def is_openai_stream(value: object) -> bool:
    """An OpenAI SDK ``AsyncStream`` (known by its class: the SDK is not imported here)."""
    kind = type(value)
    return kind.__name__ == "AsyncStream" and kind.__module__.startswith("openai")


def direct_stream(
    litellm: ModuleType, wrapper: Any, params: Mapping[str, Any]
) -> DirectStream | None:
    """A :class:`DirectStream` for litellm's ``wrapper``, or ``None`` where litellm must read it.

    Only for the ``openai`` provider's SDK stream, unread, and only when nothing else reads
    litellm's chunks: no callback or cache (the caller checks that), no budget, no call
    parameter that changes the chunks (``n``, ``logprobs``, ``merge_reasoning_content_in_choices``,
    a mock), and no streaming time limit (``LITELLM_MAX_STREAMING_DURATION_SECONDS``).
    """
    sdk_stream = getattr(wrapper, "completion_stream", None)
    response = getattr(sdk_stream, "response", None)
    if (
        getattr(wrapper, "custom_llm_provider", None) != "openai"
        or not is_openai_stream(sdk_stream)
        or response is None
        or not hasattr(response, "aiter_bytes")
        or getattr(wrapper, "chunks", None)  # already read
        or getattr(litellm, "max_budget", None)
        or _WRAPPER_PARAMS & params.keys()
        or os.environ.get("LITELLM_MAX_STREAMING_DURATION_SECONDS")
    ):
        return None
    return DirectStream(litellm, wrapper, response)
