"""Reads a provider's stream from its HTTP body, where nothing else can tell.

litellm returns a ``CustomStreamWrapper`` over each provider's stream. Per chunk, the
provider's SDK (or litellm's own iterator) builds objects from the JSON, and litellm's wrapper
builds a second set from those: most of a serving process's CPU on a long answer, and most of
the work between a response's head and its first text. Measured in
``bench/bench_serving.py`` (README, "Performance").

When nothing can read litellm's copy of the chunks —
:func:`~helix_stream.models._lean_stream.direct_stream` says when — helix
reads the server-sent events itself: one ``json.loads`` per event, made into chunks with the
fields :class:`~helix_stream.models._parse.StepParser` reads, by attribute, as it reads
litellm's. litellm still builds, signs, sends and times the request, and maps its errors: a
failure while reading goes through the wrapper's own error mapping, so the caller sees the
exception litellm would have raised. Two wire formats are read this way:

* the ``openai`` provider's chat completions (:mod:`._direct_openai`): OpenAI, and any
  OpenAI-compatible server behind ``openai/`` and an ``api_base``;
* the ``anthropic`` provider's Messages stream (:mod:`._direct_anthropic`).

This module owns what both share: the event decoder (:class:`Events`), the chunk objects
(:class:`Fields`) and the read loop.

Whether anything reads litellm's chunks is decided when the stream opens: a callback
registered while it streams sees the calls that start after it.

It receives the litellm module and litellm's stream as arguments: only ``_litellm.py`` imports
litellm.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from types import ModuleType
from typing import Any

__all__ = ["DirectStream", "Events", "Fields", "count_reasoning", "is_openai_stream"]


class Fields:
    """A JSON object read as attributes: its ``__dict__`` is the parsed object itself."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__ = values

    def __repr__(self) -> str:
        return f"Fields({self.__dict__!r})"


class Events:
    """Server-sent events from a body's bytes: :meth:`feed` returns each complete event's data.

    Lines end with LF or CRLF, a blank line ends an event, and an event's ``data:`` lines are
    joined with LF; ``event:``, ``id:``, ``retry:`` and comments carry nothing either format
    needs (an Anthropic event names its type in its data too). State is kept across blocks: a
    line or an event may be cut anywhere. A ``[DONE]`` event ends the stream: it sets
    :attr:`done`, and nothing after it is returned.
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
    """The chunks of one stream, read from the HTTP body; a subclass reads each wire format.

    Iterate it like litellm's stream; :meth:`aclose` closes the response. A subclass
    implements :meth:`_parse` (one event's data to a chunk, or ``None``; it may raise) and
    may add chunks after the body's end (:meth:`_end`); it sets :attr:`_finished` once the
    provider said why the answer ended. A clean end before that is the error litellm's
    wrapper raises; a read error after it is not an error.
    """

    # litellm's wrapper fails a clean end before a finish reason on the OpenAI-shaped streams
    # only; on the others it ends the answer there.
    _eof_is_error = True

    def __init__(self, litellm: ModuleType, wrapper: Any, response: Any = None) -> None:
        self._litellm = litellm
        self._wrapper = wrapper
        self._response = response
        self._finished = False
        self._events = Events()
        self._done = False  # the body said it ended (an SSE ``[DONE]``)
        self._first: dict[str, Any] = {
            # What litellm's first chunk says about the response: the model name litellm
            # puts on its chunks (the requested one, not the provider's) and the hidden params.
            "_hidden_params": {
                **(getattr(wrapper, "_hidden_params", None) or {}),
                "custom_llm_provider": getattr(wrapper, "custom_llm_provider", None),
            },
            "model": getattr(wrapper, "_cached_model_name", None)
            or getattr(wrapper, "model", None),
        }
        self._iterator = self._chunks()

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterator

    async def __anext__(self) -> Any:
        return await self._iterator.__anext__()

    async def aclose(self) -> None:
        await self._iterator.aclose()
        if self._response is not None:
            await self._response.aclose()
        else:  # read by litellm (see _open)
            close = getattr(self._wrapper, "aclose", None)
            if close is not None:
                await close()

    async def _open(self) -> Any:
        """The HTTP response to read, or ``None``: litellm's wrapper reads this stream."""
        return self._response

    async def _chunks(self) -> AsyncGenerator[Any, None]:
        try:
            self._response = await self._open()
        except Exception as exc:
            self._fail(exc)
        if self._response is None:  # litellm's reading, as it is
            async for chunk in self._wrapper:
                yield chunk
            return
        first = True
        try:
            async for block in self._response.aiter_bytes():
                for chunk in self._feed(block):
                    if chunk is None:
                        continue
                    if first:
                        first = False
                        _label(chunk, self._first)
                    yield chunk
                if self._done:
                    break
        except Exception as exc:
            if not (self._finished and _is_read_error(exc)):
                self._fail(exc)
        if not self._finished:
            if self._eof_is_error:
                self._fail(self._ended_early())
            # litellm's wrapper ends the answer there, as if the provider said "stop".
            yield Fields({"choices": [Fields({"delta": Fields({}), "finish_reason": "stop"})]})
        for chunk in self._end():
            yield chunk

    def _feed(self, block: bytes) -> Iterator[Any]:
        """The chunks one block of the body makes (``None`` entries are skipped), made one by
        one as they are read: an event that raises comes after the chunks before it.

        By default the body is server-sent events, each event's data read by :meth:`_parse`.
        """
        events = self._events.feed(block)
        self._done = self._events.done
        return map(self._parse, events)

    def _parse(self, data: bytes) -> Any:
        raise NotImplementedError

    def _end(self) -> list[Fields]:
        """The chunks after the end of a finished stream's body (none by default)."""
        return []

    def _ended_early(self) -> Exception:
        """What litellm's wrapper raises at a clean end before a finish reason."""
        make = getattr(self._wrapper, "_stream_eof_error", None)
        if callable(make):
            made = make()
            if isinstance(made, Exception):
                return made
        import httpx  # loaded with litellm

        return httpx.RemoteProtocolError("Stream ended before a finish_reason was received")

    def _fail(self, exc: Exception) -> None:
        """Raise what litellm's wrapper raises for ``exc`` (its own mapping, when it has one)."""
        handle = getattr(self._wrapper, "_handle_stream_fallback_error", None)
        if handle is not None:
            handle(exc)
        raise exc


def _label(chunk: Any, first: dict[str, Any]) -> None:
    """Give the stream's first chunk what litellm's wrapper puts on its first chunk."""
    if isinstance(chunk, Fields):
        chunk.__dict__.update(first)
        return
    # One of litellm's own chunks (a shape the direct reader left to litellm's parser).
    chunk.model = first["model"]
    hidden = getattr(chunk, "_hidden_params", None)
    if isinstance(hidden, dict):
        hidden.update(first["_hidden_params"])


def count_reasoning(litellm: ModuleType, usage: Any, reasoning: list[str]) -> None:
    """Reasoning tokens the provider did not count, counted as litellm's stream builder counts
    them: once, from the whole reasoning text, capped at the completion tokens.

    ``usage`` is a usage dict or litellm's ``Usage``; it is changed in place (it is the
    stream's own, not yet handed out).
    """
    text = "".join(reasoning)
    if not text:
        return
    details = _read(usage, "completion_tokens_details")
    if details is not None and _read(details, "reasoning_tokens") is not None:
        return
    counted = litellm.token_counter(text=text, count_response_tokens=True)
    completion = _read(usage, "completion_tokens")
    capped = min(max(0, counted), completion if isinstance(completion, int) else 0)
    if isinstance(usage, dict):
        usage["completion_tokens_details"] = {**(details or {}), "reasoning_tokens": capped}
    elif details is None:
        usage.completion_tokens_details = litellm.types.utils.CompletionTokensDetailsWrapper(
            reasoning_tokens=capped, text_tokens=(completion or 0) - capped
        )
    else:
        details.reasoning_tokens = capped
        if getattr(details, "text_tokens", None) is None:
            details.text_tokens = (completion or 0) - capped


def _read(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _is_read_error(exc: BaseException) -> bool:
    import httpx  # loaded with litellm

    return isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError))


def is_openai_stream(value: object) -> bool:
    """An OpenAI SDK ``AsyncStream`` (known by its class: the SDK is not imported here)."""
    kind = type(value)
    return kind.__name__ == "AsyncStream" and kind.__module__.startswith("openai")
