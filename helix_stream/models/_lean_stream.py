"""Per-chunk work litellm does on a stream that nothing consumes, skipped when nothing can.

This module owns :func:`lighten_stream`, which :func:`helix_stream.models._litellm.acompletion`
applies to every stream litellm returns. Two costs of litellm's stream wrapper
(``CustomStreamWrapper``), measured in ``bench/bench_serving.py``:

* **The assembled answer.** When a stream ends, litellm rebuilds the whole response from every
  chunk (``stream_chunk_builder``, in a worker thread: CPU the serving process pays, about a
  quarter of litellm's streaming cost on a long answer). Callbacks and the cache read that
  answer; the caller only gets its usage, in the last chunk. With no callback registered
  (globally or on the call), no cache, and usage the provider reported itself, helix builds the
  answer from the chunks that carry usage and the finish reason only, and counts the reasoning
  tokens the provider did not report from the whole reasoning text, once, as litellm's builder
  does: the usage chunk the caller gets is the same. In every other case litellm's own builder runs.
* **An async generator per chunk.** litellm reads the OpenAI SDK's stream with a fresh
  ``async for`` per chunk, and the SDK's ``__aiter__`` is an async generator function: each
  chunk makes a generator that is dropped after one item, and the event loop schedules a task
  to finalize it. helix hands litellm the SDK stream's own iterator, which yields the same
  items in the same order.

A third saving, reading an OpenAI or Anthropic stream's body directly instead of litellm's
objects (:mod:`._direct_stream`), is decided here too (:func:`direct_stream`).

It receives the litellm module as an argument: only ``_litellm.py`` imports litellm.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Literal

from ._direct_anthropic import AnthropicStream, anthropic_response
from ._direct_bedrock import BedrockStream, bedrock_parts
from ._direct_gemini import GeminiStream, is_gemini_call
from ._direct_openai import OpenAIStream
from ._direct_stream import DirectStream, count_reasoning, is_openai_stream

__all__ = ["direct_stream", "lighten_stream", "nothing_reads_the_answer", "read_path"]

# Call parameters that change what litellm's wrapper makes of the chunks.
_WRAPPER_PARAMS = frozenset(
    {"merge_reasoning_content_in_choices", "n", "logprobs", "mock_response"}
)

# Call parameters through which a caller asks litellm to log or cache this one call.
_PER_CALL_CONSUMERS = frozenset(
    {"callbacks", "success_callback", "failure_callback", "logger_fn", "caching", "cache"}
)
_GLOBAL_CALLBACK_LISTS = (
    "callbacks",
    "success_callback",
    "failure_callback",
    "_async_success_callback",
    "_async_failure_callback",
    "input_callback",
    "service_callback",
    "audit_log_callbacks",
)

enabled = True
"""Switch for tests and benches: ``False`` leaves litellm's streams exactly as they are."""


def nothing_reads_the_answer(litellm: ModuleType, params: Mapping[str, Any]) -> bool:
    """No litellm callback (global or per call) and no cache can see this call's answer."""
    if getattr(litellm, "cache", None) is not None:
        return False
    for name in _GLOBAL_CALLBACK_LISTS:
        # litellm's "cache" entry acts only when ``litellm.cache`` is set (checked above). Its
        # Gemini/Vertex context caching builds a Cache at import, which registers the entry
        # globally: without this, one Gemini call would keep every later stream whole.
        if any(callback != "cache" for callback in getattr(litellm, name, None) or ()):
            return False
    return not (_PER_CALL_CONSUMERS & params.keys())


class _SharedIterator:
    """The OpenAI SDK stream, iterated through its one underlying iterator."""

    __slots__ = ("_iterator", "_stream")

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._iterator = stream._iterator

    def __aiter__(self) -> Any:
        return self._iterator

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def direct_stream(
    litellm: ModuleType, wrapper: Any, params: Mapping[str, Any]
) -> DirectStream | None:
    """A direct reader for litellm's ``wrapper``, or ``None`` where litellm must read it.

    Only for the ``openai`` provider's SDK stream, the ``anthropic`` provider's Messages
    stream, a Gemini ``streamGenerateContent`` call (``gemini``, ``vertex_ai``) and a Bedrock
    ConverseStream, unread, and only when nothing else reads litellm's chunks: no callback or cache
    (the caller checks that), no budget, no call parameter that changes the chunks (``n``,
    ``logprobs``, ``merge_reasoning_content_in_choices``, a mock), and no streaming time limit
    (``LITELLM_MAX_STREAMING_DURATION_SECONDS``). An Anthropic stream litellm reshapes (JSON
    mode, a ``response_format`` tool, renamed tools) stays litellm's too.
    """
    if (
        getattr(wrapper, "chunks", None)  # already read
        or getattr(litellm, "max_budget", None)
        or _WRAPPER_PARAMS & params.keys()
        or os.environ.get("LITELLM_MAX_STREAMING_DURATION_SECONDS")
    ):
        return None
    inner = getattr(wrapper, "completion_stream", None)
    provider = getattr(wrapper, "custom_llm_provider", None)
    if provider == "openai" and is_openai_stream(inner):
        response = getattr(inner, "response", None)
        kind: type[DirectStream] = OpenAIStream
    elif provider == "anthropic":
        response, kind = anthropic_response(inner), AnthropicStream
    elif is_gemini_call(wrapper):  # litellm's "vertex_ai_beta": the gemini/ and vertex_ai/ routes
        return GeminiStream(litellm, wrapper)  # the request is made when it is first read
    elif provider == "bedrock" and (parts := bedrock_parts(inner)) is not None:
        return BedrockStream(litellm, wrapper, *parts)
    else:
        return None
    if not hasattr(response, "aiter_bytes"):
        return None
    return kind(litellm, wrapper, response)


def read_path(stream: object) -> Literal["direct", "litellm"]:
    """``"direct"`` for a stream helix reads from the HTTP body, else ``"litellm"``."""
    return "direct" if isinstance(stream, DirectStream) else "litellm"


def _is_openai_stream(value: object) -> bool:
    return is_openai_stream(value) and hasattr(value, "_iterator")


def lighten_stream(
    litellm: ModuleType, stream: Any, params: Mapping[str, Any], *, direct: bool = False
) -> Any:
    """Apply the savings to a ``CustomStreamWrapper`` where they are safe; return the stream.

    With ``direct`` (the caller passes the chunks to nothing that expects litellm's own
    objects), an OpenAI stream that nothing else reads is read from its HTTP body instead
    (:mod:`._direct_stream`).
    """
    if not enabled or not hasattr(stream, "completion_stream"):
        return stream
    unobserved = getattr(
        stream.logging_obj, "_on_deferred_stream_complete", None
    ) is None and nothing_reads_the_answer(litellm, params)
    if direct and unobserved:
        reader = direct_stream(litellm, stream, params)
        if reader is not None:
            return reader
    if _is_openai_stream(stream.completion_stream):
        stream.completion_stream = _SharedIterator(stream.completion_stream)
    kind = type(stream)
    if (
        hasattr(kind, "_async_build_complete_streaming_response")
        and isinstance(getattr(stream, "chunks", None), list)
        and unobserved
    ):
        built: list[Any] = []  # litellm asks twice at the end of a stream with usage
        # Weakly: the stream holds this function, which must not keep the stream (and all its
        # chunks) alive in a reference cycle until the cyclic garbage collector runs.
        ref = weakref.ref(stream)

        async def usage_only() -> Any:
            stream = ref()
            assert stream is not None  # litellm calls it on the stream
            build = functools.partial(kind._async_build_complete_streaming_response, stream)
            # Checked again at the end: a callback or cache registered meanwhile gets the
            # whole answer, as it would have without helix.
            chunks = stream.chunks
            if not nothing_reads_the_answer(litellm, params) or not any(
                _usage(c) is not None for c in chunks
            ):
                return await build()
            if built and built[0] == len(chunks):
                return built[1]
            kept = [
                c for i, c in enumerate(chunks) if i == 0 or _usage(c) is not None or _finishes(c)
            ]
            try:
                answer = litellm.stream_chunk_builder(
                    chunks=kept, messages=stream.messages, logging_obj=stream.logging_obj
                )
            except Exception:
                return await build()
            _count_unreported_reasoning(litellm, getattr(answer, "usage", None), chunks)
            built[:] = [len(chunks), answer]
            return answer

        stream._async_build_complete_streaming_response = usage_only
    return stream


def _usage(chunk: Any) -> Any:
    # litellm keeps a chunk's usage as a pydantic extra: reading a missing one through
    # getattr raises inside pydantic (2.5 µs a chunk); the extras dict answers at once.
    extra = getattr(chunk, "__pydantic_extra__", None)
    if isinstance(extra, dict) and "usage" not in vars(chunk):
        return extra.get("usage")
    return getattr(chunk, "usage", None)


def _count_unreported_reasoning(litellm: ModuleType, usage: Any, chunks: list[Any]) -> None:
    """Reasoning tokens the provider did not report, counted from the whole answer's reasoning
    text as litellm's builder counts them (it saw only the kept chunks' reasoning)."""
    reasoning = [r for c in chunks if (r := _reasoning(c))]
    if usage is None or not reasoning:
        return
    reported = next((u for c in reversed(chunks) if (u := _usage(c)) is not None), None)
    details = getattr(reported, "completion_tokens_details", None)
    if getattr(details, "reasoning_tokens", None) is not None:
        return
    unreported_text = getattr(details, "text_tokens", None) is None
    built = getattr(usage, "completion_tokens_details", None)
    if built is not None:
        built.reasoning_tokens = None
        if unreported_text:
            built.text_tokens = None
    count_reasoning(litellm, usage, reasoning)


def _reasoning(chunk: Any) -> str | None:
    choices: Any = getattr(chunk, "choices", None)
    if not choices:
        return None
    value = vars(getattr(choices[0], "delta", None) or object()).get("reasoning_content")
    return value if isinstance(value, str) else None


def _finishes(chunk: Any) -> bool:
    choices: Any = getattr(chunk, "choices", None)
    return bool(choices) and getattr(choices[0], "finish_reason", None) is not None
