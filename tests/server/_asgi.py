"""Drive an ASGI app in-process, streaming: read a response as it is sent, disconnect at will.

``httpx.ASGITransport`` only returns a response once the app has finished it, so it cannot
show a stream live or leave in the middle of one. :class:`LiveRequest` calls the app itself
(same event loop as the test, so MemoryStore is safe) and hands out body pieces as they come.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any


def sse_data(raw: bytes) -> list[Any]:
    """The ``data:`` payloads of an SSE body, JSON-decoded (``"[DONE]"`` kept as the string)."""
    out: list[Any] = []
    for event in raw.decode().replace("\r\n", "\n").split("\n\n"):
        data = [
            line[5:].removeprefix(" ") for line in event.split("\n") if line.startswith("data:")
        ]
        if data:
            text = "\n".join(data)
            out.append(text if text == "[DONE]" else json.loads(text))
    return out


class LiveRequest:
    """One request to ``app``; use as ``async with LiveRequest(app, "POST", "/api/chat", body)``."""

    def __init__(
        self,
        app: Any,
        method: str,
        path: str,
        body: Mapping[str, Any] | bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        raw = json.dumps(body).encode() if isinstance(body, Mapping) else (body or b"")
        self._app = app
        self._scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(raw)).encode()),
                *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        self._incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._incoming.put_nowait({"type": "http.request", "body": raw, "more_body": False})
        self._sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.status = 0
        self.body = b""
        self.ended = False
        self._buffer = b""
        self._pending: list[Any] = []
        self._left = False

    async def __aenter__(self) -> LiveRequest:
        self._task = asyncio.create_task(self._app(self._scope, self._incoming.get, self._sent.put))
        start = await asyncio.wait_for(self._sent.get(), 10)
        assert start["type"] == "http.response.start", start
        self.status = start["status"]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.disconnect()

    async def next_chunk(self) -> Any:
        """The next SSE ``data:`` payload (``None`` once the response has ended)."""
        while not self._pending:
            if self.ended:
                return None
            message = await asyncio.wait_for(self._sent.get(), 10)
            piece = message.get("body", b"")
            self.body += piece
            self.ended = not message.get("more_body", False)
            self._buffer += piece
            *events, self._buffer = self._buffer.split(b"\n\n")
            for event in events:
                self._pending.extend(sse_data(event + b"\n\n"))
        return self._pending.pop(0)

    async def chunks(self) -> AsyncIterator[Any]:
        """SSE ``data:`` payloads as they arrive (complete events only)."""
        while (item := await self.next_chunk()) is not None:
            yield item

    async def read_until(self, predicate: Any) -> list[Any]:
        """Collect SSE payloads up to and including the first one ``predicate`` accepts."""
        seen: list[Any] = []
        async for item in self.chunks():
            seen.append(item)
            if predicate(item):
                return seen
        raise AssertionError(f"the stream ended before the awaited chunk: {seen}")

    async def read_all(self) -> list[Any]:
        """Every remaining SSE payload until the response ends."""
        return [item async for item in self.chunks()]

    async def disconnect(self, timeout: float = 10) -> None:
        """Tell the app the client is gone and wait until it has wound down."""
        self.leave()
        await self.closed(timeout)

    def leave(self) -> None:
        """Tell the app the client is gone (a reload, a closed tab), without waiting."""
        if not self._left:
            self._left = True
            self._incoming.put_nowait({"type": "http.disconnect"})

    async def closed(self, timeout: float = 10) -> None:
        """Wait until the app has finished this request."""
        assert self._task is not None
        await asyncio.wait_for(self._task, timeout)
