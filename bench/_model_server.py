"""A loopback model for the serving bench, in four wire formats: its own process, raw asyncio.

Run: ``python bench/_model_server.py PORT`` (bench_serving.py starts it).

Every answer is the one the model name asks for: ``words-N-D`` is N distinct words
(``w0 w1 ...``), D milliseconds apart, each word one event of the provider's format:

* ``POST .../chat/completions`` (OpenAI): one chunk per word, a ``finish_reason: stop`` chunk
  and, when the request asks for ``stream_options.include_usage``, a usage chunk;
* ``POST .../v1/messages`` (Anthropic Messages): ``message_start`` with usage, one
  ``content_block_delta`` per word, ``message_delta`` with ``end_turn`` and usage;
* ``POST .../models/words-N-D:streamGenerateContent`` (Gemini): one ``GenerateContentResponse``
  per word, the last with ``finishReason: STOP`` and ``usageMetadata``;
* ``POST .../model/words-N-D/converse-stream`` (Bedrock Converse): binary AWS event-stream
  frames, one ``contentBlockDelta`` per word, ``messageStop``, ``metadata`` with usage.

It is written on asyncio streams, with each event's bytes built once, so that 200 streams at
50 chunks a second cost this process little of the machine's two cores.

``GET /stats`` answers ``{"requests": n, "by_text": {last user text: count}}``: how many model
calls each user text caused (the bench's check that a session ran in one worker only).
"""

from __future__ import annotations

import asyncio
import collections
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.providers.bedrock_server import event_frame

_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)
_SSE = b"text/event-stream"

requests = 0
by_text: collections.Counter[str] = collections.Counter()


def expected_text(words: int) -> str:
    """The full text of a ``words-N-D`` answer."""
    return "".join(f"w{i} " for i in range(words))


def _chunked(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


def _frame(payload: dict[str, Any] | str, name: str | None = None) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    head = f"event: {name}\n" if name else ""
    return _chunked(f"{head}data: {data}\n\n".encode())


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


def _openai(body: dict[str, Any], model: str, count: int) -> Any:
    yield False, _chunk(model, {"role": "assistant", "content": ""})
    for i in range(count):
        yield True, _chunk(model, {"content": f"w{i} "})
    yield False, _chunk(model, {}, "stop")
    if (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": 10, "completion_tokens": count, "total_tokens": count + 10}
        yield False, _frame(
            {
                "id": "chatcmpl-bench",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": model,
                "choices": [],
                "usage": usage,
            }
        )
    yield False, _frame("[DONE]")


def _anthropic(body: dict[str, Any], model: str, count: int) -> Any:
    message = {"id": "msg_bench", "type": "message", "role": "assistant", "model": model,
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 1}}  # fmt: skip
    yield False, _frame({"type": "message_start", "message": message}, "message_start")
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    yield False, _frame(start, "content_block_start")
    for i in range(count):
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": f"w{i} "}}  # fmt: skip
        yield True, _frame(delta, "content_block_delta")
    yield False, _frame({"type": "content_block_stop", "index": 0}, "content_block_stop")
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
           "usage": {"output_tokens": count}}  # fmt: skip
    yield False, _frame(end, "message_delta")
    yield False, _frame({"type": "message_stop"}, "message_stop")


def _gemini(body: dict[str, Any], model: str, count: int) -> Any:
    for i in range(count):
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": f"w{i} "}]},
                                     "index": 0}  # fmt: skip
        chunk: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
        if i == count - 1:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = {"promptTokenCount": 10, "candidatesTokenCount": count,
                                      "totalTokenCount": count + 10}  # fmt: skip
        yield True, _frame(chunk)


def _bedrock(body: dict[str, Any], model: str, count: int) -> Any:
    yield False, _chunked(event_frame("messageStart", {"role": "assistant"}))
    for i in range(count):
        delta = {"contentBlockIndex": 0, "delta": {"text": f"w{i} "}}
        yield True, _chunked(event_frame("contentBlockDelta", delta))
    yield False, _chunked(event_frame("contentBlockStop", {"contentBlockIndex": 0}))
    yield False, _chunked(event_frame("messageStop", {"stopReason": "end_turn"}))
    usage = {"inputTokens": 10, "outputTokens": count, "totalTokens": count + 10}
    yield False, _chunked(event_frame("metadata", {"usage": usage, "metrics": {"latencyMs": 1}}))


_FORMATS = {"openai": _openai, "anthropic": _anthropic, "gemini": _gemini, "bedrock": _bedrock}


def _route(path: str, body: dict[str, Any]) -> tuple[str, str]:
    """(wire format, model name) of a request."""
    path = unquote(path.split("?", 1)[0])
    if path.endswith("/messages"):
        return "anthropic", body["model"]
    if ":streamGenerateContent" in path:
        return "gemini", path.rsplit("/", 1)[1].split(":", 1)[0]
    if path.endswith("/converse-stream"):
        return "bedrock", path.rsplit("/", 2)[1]
    return "openai", body["model"]


async def _stream(writer: asyncio.StreamWriter, path: str, body: dict[str, Any]) -> None:
    kind, model = _route(path, body)
    _, words, delay_ms = model.split("-")
    count, delay = int(words), int(delay_ms) / 1000
    writer.write(_HEAD % (b"application/vnd.amazon.eventstream" if kind == "bedrock" else _SSE))
    for word, event in _FORMATS[kind](body, model, count):  # each word D ms after the last
        if word and delay:
            await asyncio.sleep(delay)
        writer.write(event)
        if word:
            await writer.drain()
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
            streamed = body.get("stream") or "stream" in path.lower()  # Gemini, Bedrock: the path
            if not streamed:
                await _answer_json(writer, "400 Bad Request", {"error": {"message": "stream only"}})
                continue
            await _stream(writer, path, body)
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
