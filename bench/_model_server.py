"""A loopback OpenAI-compatible model for the serving bench: its own process, raw asyncio.

Run: ``python bench/_model_server.py PORT`` (bench_serving.py starts it).

``POST /v1/chat/completions`` streams the answer the model name asks for: ``words-N-D`` is N
distinct words (``w0 w1 ...``), D milliseconds apart, then a ``finish_reason: stop`` chunk and,
when the request asks for ``stream_options.include_usage``, a usage chunk, as OpenAI does.
It is written on asyncio streams, with each chunk's bytes built once, so that 200 streams at
50 chunks a second cost this process little of the machine's two cores.

``GET /stats`` answers ``{"requests": n, "by_text": {last user text: count}}``: how many model
calls each user text caused (the bench's check that a session ran in one worker only).
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
from typing import Any

_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)

requests = 0
by_text: collections.Counter[str] = collections.Counter()


def expected_text(words: int) -> str:
    """The full text of a ``words-N-D`` answer."""
    return "".join(f"w{i} " for i in range(words))


def _frame(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    event = f"data: {data}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(event), event)


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _frame(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


async def _stream(writer: asyncio.StreamWriter, body: dict[str, Any]) -> None:
    model = body["model"]
    _, words, delay_ms = model.split("-")
    count, delay = int(words), int(delay_ms) / 1000
    writer.write(_HEAD)
    writer.write(_chunk(model, {"role": "assistant", "content": ""}))
    for i in range(count):
        if delay:
            await asyncio.sleep(delay)
        writer.write(_chunk(model, {"content": f"w{i} "}))
        await writer.drain()
    writer.write(_chunk(model, {}, "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": 10, "completion_tokens": count, "total_tokens": count + 10}
        writer.write(
            _frame(
                {
                    "id": "chatcmpl-bench",
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                }
            )
        )
    writer.write(_frame("[DONE]"))
    writer.write(b"0\r\n\r\n")
    await writer.drain()


async def _answer_json(writer: asyncio.StreamWriter, status: str, payload: Any) -> None:
    data = json.dumps(payload).encode()
    writer.write(
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\n\r\n".encode()
        + data
    )
    await writer.drain()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    global requests
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            method, path, _ = head.split(b"\r\n", 1)[0].decode().split(" ", 2)
            length = 0
            for line in head.decode().split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            raw = await reader.readexactly(length) if length else b""
            if method == "GET" and path.startswith("/stats"):
                await _answer_json(writer, "200 OK", {"requests": requests, "by_text": by_text})
                continue
            body = json.loads(raw)
            requests += 1
            by_text[_last_user_text(body)] += 1
            if not body.get("stream"):
                await _answer_json(writer, "400 Bad Request", {"error": {"message": "stream only"}})
                continue
            await _stream(writer, body)
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", port, backlog=2048)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
