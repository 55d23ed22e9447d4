"""The UI message stream over Server-Sent Events, on sse-starlette.

This module owns :class:`UIMessageStreamResponse`, :func:`encode_sse` and
:data:`UI_MESSAGE_STREAM_HEADERS`: the AI SDK's wire framing (ai-sdk-protocol.md, "Wire
format") — one ``data: <compact JSON>`` event per chunk, ``data: [DONE]`` last, ``: ping``
comments to keep proxies from timing out, and the five headers the AI SDK sends.

A client disconnect makes sse-starlette cancel the task that iterates the body; the
cancellation reaches the chunk iterator (and the generation behind it) through
``__anext__``, or through ``aclose`` when the body was suspended while sending.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from types import MappingProxyType
from typing import Any

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent

from helix_stream.errors import ERROR_MASK

__all__ = ["UI_MESSAGE_STREAM_HEADERS", "UIMessageStreamResponse", "encode_sse"]

logger = logging.getLogger("helix_stream.transformers")

UI_MESSAGE_STREAM_HEADERS: Mapping[str, str] = MappingProxyType(
    {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "connection": "keep-alive",
        "x-vercel-ai-ui-message-stream": "v1",
        "x-accel-buffering": "no",
    }
)
"""The headers of a UI message stream response, exactly as the AI SDK sends them."""

_DONE = b"data: [DONE]\n\n"


def _json_default(value: Any) -> Any:
    # Tool outputs and data parts may hold pydantic models or dataclasses; anything else that
    # JSON cannot hold is sent as its str() rather than breaking the stream mid-way.
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


# One encoder for all chunks: json.dumps with options builds a new encoder per call.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_json_default)


def encode_sse(chunk: Mapping[str, Any]) -> str:
    """One SSE event for a UI chunk: ``data: <compact JSON>\\n\\n``.

    Example:
        >>> encode_sse({"type": "text-delta", "id": "t", "delta": "é"})
        'data: {"type":"text-delta","id":"t","delta":"é"}\\n\\n'
    """
    return "data: " + _ENCODER.encode(chunk) + "\n\n"


def _ping() -> ServerSentEvent:
    return ServerSentEvent(comment="ping", sep="\n")


async def _sse_body(ui_chunks: AsyncIterable[Mapping[str, Any]]) -> AsyncIterator[bytes]:
    iterator = ui_chunks.__aiter__()
    try:
        try:
            async for chunk in iterator:
                yield encode_sse(chunk).encode()
        except Exception:
            # to_ui_message_stream never raises; another chunk iterator might. The wire gets
            # one masked error chunk, never a traceback (STYLE.md, "Errors").
            logger.exception("the UI chunk iterator raised")
            yield encode_sse({"type": "error", "errorText": ERROR_MASK}).encode()
        yield _DONE
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


class UIMessageStreamResponse(EventSourceResponse):
    """A Starlette response that streams UI chunks the way ``useChat`` reads them.

    Args:
        ui_chunks: UI chunk dicts, typically
            :func:`~helix_stream.transformers.to_ui_message_stream`'s iterator.
        status_code: The HTTP status.
        headers: Extra headers (they may override the defaults).
        ping_interval: Seconds between ``: ping`` comments; 0 disables them.

    Closing: when the client disconnects, the iteration of ``ui_chunks`` is cancelled and
    ``ui_chunks`` is closed, so a generation behind it stops.

    Example:
        >>> async def chat(request):  # doctest: +SKIP
        ...     stream = await litellm.acompletion(model=..., messages=..., stream=True)
        ...     return UIMessageStreamResponse(to_ui_message_stream(stream))
    """

    def __init__(
        self,
        ui_chunks: AsyncIterable[Mapping[str, Any]],
        *,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        ping_interval: float = 15,
    ) -> None:
        merged = dict(UI_MESSAGE_STREAM_HEADERS)
        if headers:
            merged.update({key.lower(): value for key, value in headers.items()})
        super().__init__(
            _sse_body(ui_chunks),
            status_code=status_code,
            headers=merged,
            media_type="text/event-stream",
            ping=ping_interval,
            sep="\n",
            ping_message_factory=_ping,
        )
