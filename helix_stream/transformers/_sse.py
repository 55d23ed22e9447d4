"""The UI message stream over Server-Sent Events: a lean Starlette response of our own.

This module owns :class:`UIMessageStreamResponse`, :func:`encode_sse` and
:data:`UI_MESSAGE_STREAM_HEADERS`: the AI SDK's wire framing (docs/ui-message-stream.md,
"Wire format") — one ``data: <compact JSON>`` event per chunk, ``data: [DONE]`` last, ``: ping``
comments to keep proxies from timing out, and the five headers the AI SDK sends.

Per chunk it does one JSON encoding and one ASGI ``send``, nothing else: no timer, no cancel
scope, no lock (sse-starlette's per-event work cost more than the mapping itself). Per request
it runs the body in a task of its own, beside a task that watches for the client's disconnect
and, when pings are on, a task that pings.

What a disconnect does is the response's ``on_disconnect``:

* ``"cancel"`` (the default): the body task is cancelled once, the asyncio way; the
  cancellation reaches the chunk iterator (and the generation behind it) through
  ``__anext__``, or through ``aclose`` when the body was suspended while sending, and the
  response waits for that cleanup (:func:`helix_stream._cleanup.run_cleanup`);
* ``"continue"``: the body goes on reading the iterator to its end, sending nothing more, so
  that the generation behind it finishes (and a resume registry keeps its chunks for a client
  that comes back), for at most ``detached_timeout`` seconds; then it is cancelled as above.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import AsyncIterable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from starlette.background import BackgroundTask
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from helix_stream._cleanup import aclose_quietly, run_cleanup
from helix_stream.errors import ERROR_MASK

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "OnDisconnect",
    "UIMessageStreamResponse",
    "check_on_disconnect",
    "encode_sse",
    "encode_sse_bytes",
]

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

OnDisconnect = Literal["cancel", "continue"]


def check_on_disconnect(value: str) -> OnDisconnect:
    """``value`` as an :data:`OnDisconnect`, or a ValueError that says what it may be."""
    if value == "cancel":
        return "cancel"
    if value == "continue":
        return "continue"
    raise ValueError(f"on_disconnect must be 'continue' or 'cancel', not {value!r}")


_DONE = b"data: [DONE]\n\n"
_PING = b": ping\n\n"


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


def encode_sse_bytes(item: Mapping[str, Any] | bytes) -> bytes:
    """:func:`encode_sse` as UTF-8 bytes; ``bytes`` are taken as an encoded event already."""
    if item.__class__ is bytes:
        return item  # type: ignore[return-value,unused-ignore]
    return ("data: " + _ENCODER.encode(item) + "\n\n").encode()


class UIMessageStreamResponse(Response):
    """A Starlette response that streams UI chunks the way ``useChat`` reads them.

    Args:
        ui_chunks: UI chunk dicts, typically
            :func:`~helix_stream.transformers.to_ui_message_stream`'s iterator (items that are
            ``bytes`` are sent as they are: already-encoded SSE events).
        status_code: The HTTP status.
        headers: Extra headers (they may override the defaults).
        ping_interval: Seconds between ``: ping`` comments; 0 disables them.
        background: A Starlette background task to run after the response.
        on_disconnect: What a client that goes away does to ``ui_chunks``: ``"cancel"``
            (default) cancels its iteration and closes it, so a generation behind it stops;
            ``"continue"`` reads it on to its end without sending, so the generation finishes.
        detached_timeout: With ``"continue"``: seconds the iteration may go on once the client
            has gone (then it is cancelled as with ``"cancel"``); ``None`` for no bound.

    An exception from ``ui_chunks`` is logged and sent as one masked ``error`` chunk, then
    ``[DONE]``.

    Example::

        import litellm
        from starlette.requests import Request

        async def chat(request: Request) -> UIMessageStreamResponse:
            body = await request.json()
            stream = await litellm.acompletion(model="openai/gpt-4o-mini", stream=True,
                                               messages=[{"role": "user", "content": body["text"]}])
            return UIMessageStreamResponse(to_ui_message_stream(stream))
    """

    media_type = "text/event-stream"

    def __init__(
        self,
        ui_chunks: AsyncIterable[Mapping[str, Any] | bytes],
        *,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        ping_interval: float = 15,
        background: BackgroundTask | None = None,
        on_disconnect: OnDisconnect = "cancel",
        detached_timeout: float | None = None,
    ) -> None:
        if ping_interval < 0:
            raise ValueError(f"ping_interval must be >= 0 (0 disables pings), not {ping_interval}")
        merged = dict(UI_MESSAGE_STREAM_HEADERS)
        if headers:
            merged.update({key.lower(): value for key, value in headers.items()})
        self.ui_chunks = ui_chunks
        self.status_code = status_code
        self.ping_interval = ping_interval
        self.background = background
        self.on_disconnect = check_on_disconnect(on_disconnect)
        self.detached_timeout = detached_timeout
        self._sending = False
        self._gone = False  # the client went away and the body reads on without sending
        self.init_headers(merged)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        loop = asyncio.get_running_loop()
        body = loop.create_task(self._body(send))
        watcher = loop.create_task(_disconnected(receive))
        pinger = loop.create_task(self._ping(send)) if self.ping_interval > 0 else None
        try:
            await asyncio.wait((body, watcher), return_when=asyncio.FIRST_COMPLETED)
            if not body.done() and self.on_disconnect == "continue":
                self._gone = True
                if pinger is not None:
                    pinger.cancel()
                await asyncio.wait((body,), timeout=self.detached_timeout)
        finally:
            for task in (watcher, pinger):
                if task is not None:
                    task.cancel()
            if not body.done():
                # The client went away (past detached_timeout with "continue"), or this
                # request is being cancelled (a server shutting down).
                body.cancel()
                await run_cleanup(lambda: asyncio.wait((body,)), what="ending the UI stream")
        if body.done() and not body.cancelled():
            body.result()  # re-raises what the body raised (not a client that went away)
        if self.background is not None:
            await self.background()

    async def _body(self, send: Send) -> None:
        iterator = self.ui_chunks.__aiter__()
        try:
            try:
                async for item in iterator:
                    if self._gone:
                        continue  # on_disconnect="continue": read on, send nothing
                    self._sending = True
                    await send(
                        {
                            "type": "http.response.body",
                            "body": encode_sse_bytes(item),
                            "more_body": True,
                        }
                    )
                    self._sending = False
            except OSError:
                # The client is gone (ASGI 2.4 servers raise it from send).
                if self.on_disconnect == "cancel":
                    return
                self._gone = True
                async for _ in iterator:
                    pass
            except Exception:
                # to_ui_message_stream never raises; another chunk iterator might. The wire gets
                # one masked error chunk, never a traceback (README, "Errors over HTTP").
                logger.exception("the UI chunk iterator raised")
                if not self._gone:
                    error = {"type": "error", "errorText": ERROR_MASK}
                    await send(
                        {
                            "type": "http.response.body",
                            "body": encode_sse_bytes(error),
                            "more_body": True,
                        }
                    )
            if self._gone:
                return
            self._sending = True
            await send({"type": "http.response.body", "body": _DONE, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await aclose_quietly(iterator, what="closing the UI chunk iterator")

    async def _ping(self, send: Send) -> None:
        while True:
            await asyncio.sleep(self.ping_interval)
            if not self._sending:  # never between a send and its completion
                await send({"type": "http.response.body", "body": _PING, "more_body": True})


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
