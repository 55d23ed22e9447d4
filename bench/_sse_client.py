"""A lean HTTP/1.1 chat client for the serving bench (asyncio streams, no httpx).

200 chats at once through httpx cost the load generator more CPU than a lean server spends; on
a 2-core machine that would be measured as the servers' latency. This client sends one
``useChat`` body per connection and reads the answer (chunked or with a length), timing the
first ``text-delta`` and the end, and collecting the text.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ChatResult:
    """One chat as the client saw it (times in seconds from the request being sent)."""

    status: int = 0
    first_text: float = 0.0
    end: float = 0.0
    text: str = ""
    done: bool = False  # ``data: [DONE]`` arrived
    types: list[str] = field(default_factory=list)
    body: bytes = b""  # a non-stream answer's body (e.g. a 409's JSON)
    local_port: int = 0


def chat_body(session_id: str, text: str) -> bytes:
    """The body ``useChat`` sends for a new user message."""
    message = {"id": f"u-{session_id}", "role": "user", "parts": [{"type": "text", "text": text}]}
    return json.dumps(
        {"id": session_id, "trigger": "submit-message", "messages": [message]}
    ).encode()


class _Events:
    """Feeds SSE bytes, records the chat's text and timings."""

    def __init__(self, result: ChatResult, start: float) -> None:
        self.result, self.start, self.buffer = result, start, b""

    def feed(self, data: bytes) -> None:
        self.buffer += data
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            if not event.startswith(b"data: "):
                continue  # a ping comment
            payload = event[6:]
            if payload == b"[DONE]":
                self.result.done = True
                continue
            chunk = json.loads(payload)
            kind = chunk["type"]
            self.result.types.append(kind)
            if kind == "text-delta":
                if not self.result.first_text:
                    self.result.first_text = time.perf_counter() - self.start
                self.result.text += chunk["delta"]


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str], sink: Any) -> None:
    if headers.get("transfer-encoding") == "chunked":
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return
            sink(await reader.readexactly(size))
            await reader.readexactly(2)
    elif "content-length" in headers:
        sink(await reader.readexactly(int(headers["content-length"])))


async def connect(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def post_chat(
    port: int,
    body: bytes,
    *,
    connection: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None,
    keep_open: bool = False,
) -> ChatResult:
    """POST ``body`` to ``/api/chat`` and read the whole answer.

    With ``connection`` (already open), the request goes out as soon as this is called: the
    way to fire many requests at the same instant. ``keep_open`` leaves the connection open
    after the answer (the caller closes it), so a server-side check can still see it.
    """
    reader, writer = connection or await connect(port)
    result = ChatResult(local_port=writer.get_extra_info("sockname")[1])
    start = time.perf_counter()
    writer.write(
        b"POST /api/chat HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        result.status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("content-type", "").startswith("text/event-stream"):
            events = _Events(result, start)
            await _read_body(reader, headers, events.feed)
        else:
            parts: list[bytes] = []
            await _read_body(reader, headers, parts.append)
            result.body = b"".join(parts)
        result.end = time.perf_counter() - start
    finally:
        if not keep_open:
            writer.close()
    return result
