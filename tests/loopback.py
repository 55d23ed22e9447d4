"""A loopback OpenAI-compatible server for tests: real HTTP, scripted replies, recorded bodies.

Tests reach it through litellm (``model="openai/loopback"``, ``api_base=server.api_base``), so
every request crosses a real socket. Each request body is recorded byte for byte, which is
what prefix-stability and "never sent" assertions read.

A request to a path ending in ``/messages`` is answered in Anthropic's Messages wire format
instead (``model="anthropic/..."``, ``api_base=server.anthropic_base``): text replies and usage
with Anthropic's prompt-cache counters, so that litellm's own Anthropic adapter is what reads
them.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted reply: stream deltas, or an HTTP error."""

    deltas: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"
    status: int = 200
    error: str = ""
    delay: float = 0.0  # seconds between chunks
    hang: bool = False  # after the deltas, keep the stream open until the client leaves
    midstream_error: str = ""  # after the deltas, an error event in the stream (OpenAI's form)
    usage: tuple[int, int] = (10, 5)
    # Extra fields of the usage object (``prompt_tokens_details``, ``completion_tokens_details``;
    # for the Anthropic format ``cache_read_input_tokens``/``cache_creation_input_tokens``).
    usage_details: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers
    fail_after: int | None = None  # after this many deltas, an SSE error event ends the stream
    truncate: bool = False  # after the deltas, the body ends: no finish reason, no [DONE]
    response_id: str = "chatcmpl-loopback"
    # Stalls, silent ones (nothing written, not even a keep-alive), each ``stall_for`` seconds:
    wait_headers: bool = False  # before the status line: the first byte never comes
    headers_only: bool = False  # the headers, then nothing
    stall_after: int | None = None  # after this many deltas, nothing more
    stall_for: float = 5.0
    # Held open: before the delta at ``gate_at``, wait until the test sets ``gate`` (at most 60 s).
    gate: threading.Event | None = None
    gate_at: int = 0


def text(content: str, pieces: int = 3, **kw: Any) -> Reply:
    """A text reply streamed in ``pieces`` deltas."""
    size = max(1, -(-len(content) // pieces))
    parts = [content[i : i + size] for i in range(0, len(content), size)] or [""]
    return Reply(deltas=[{"content": p} for p in parts], **kw)


def tool_calls(
    *calls: tuple[str, Any], fragment: int = 4, call_ids: list[str] | None = None, **kw: Any
) -> Reply:
    """Tool calls streamed as OpenAI does: id and name on the first fragment of each index,
    the arguments in ``fragment``-character pieces, calls interleaved (parallel calls)."""
    pieces: list[list[dict[str, Any]]] = []
    for index, (name, args) in enumerate(calls):
        raw = args if isinstance(args, str) else json.dumps(args)
        call_id = call_ids[index] if call_ids else f"call_{index}_{name}"
        frags = [raw[i : i + fragment] for i in range(0, len(raw), fragment)] or [""]
        seq = [
            {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": frags[0]},
            }
        ]
        seq += [{"index": index, "function": {"arguments": f}} for f in frags[1:]]
        pieces.append(seq)
    deltas: list[dict[str, Any]] = []
    while any(pieces):
        for seq in pieces:
            if seq:
                deltas.append({"tool_calls": [seq.pop(0)]})
    return Reply(deltas=deltas, finish_reason="tool_calls", **kw)


def error(
    status: int, message: str = "scripted failure", headers: dict[str, str] | None = None
) -> Reply:
    """An HTTP error reply (``headers``: e.g. ``{"retry-after": "1"}``)."""
    return Reply(status=status, error=message, headers=dict(headers or {}))


class LoopbackServer:
    """Serves ``POST /v1/chat/completions`` from a script on 127.0.0.1 (a background thread)."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.replies: deque[Reply] = deque()
        self.disconnects = 0
        self.open_streams = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            _reply_id = "chatcmpl-loopback"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = self.rfile.read(length)
                with server._lock:
                    server.requests.append(body)
                    reply = server.replies.popleft() if server.replies else text("ok")
                if reply.wait_headers:
                    time.sleep(reply.stall_for)
                    return  # the client gave up long ago; close without an answer
                if reply.status != 200:
                    payload = json.dumps(
                        {"error": {"message": reply.error, "type": "test", "code": reply.status}}
                    ).encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if self.path.rstrip("/").endswith("/messages"):
                    self._anthropic(reply)
                    return
                if not json.loads(body or b"{}").get("stream"):
                    self._whole(reply)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with server._lock:
                    server.open_streams += 1
                try:
                    if reply.headers_only:
                        self.wfile.flush()
                        time.sleep(reply.stall_for)
                        return
                    self._stream(reply)
                except (BrokenPipeError, ConnectionResetError):
                    with server._lock:
                        server.disconnects += 1
                finally:
                    with server._lock:
                        server.open_streams -= 1

            def _whole(self, reply: Reply) -> None:
                content = "".join(d.get("content", "") for d in reply.deltas if "content" in d)
                calls: dict[int, dict[str, Any]] = {}
                for d in reply.deltas:
                    for frag in d.get("tool_calls", []):
                        call = calls.setdefault(
                            frag["index"],
                            {
                                "id": frag.get("id"),
                                "type": "function",
                                "function": {"name": "", "arguments": ""},
                            },
                        )
                        call["function"]["name"] += frag["function"].get("name", "")
                        call["function"]["arguments"] += frag["function"].get("arguments", "")
                p, c = reply.usage
                message: dict[str, Any] = {"role": "assistant", "content": content or None}
                if calls:
                    message["tool_calls"] = [calls[i] for i in sorted(calls)]
                payload = json.dumps(
                    {
                        "id": "chatcmpl-loopback",
                        "object": "chat.completion",
                        "created": 1700000000,
                        "model": "loopback-model",
                        "choices": [
                            {"index": 0, "message": message, "finish_reason": reply.finish_reason}
                        ],
                        "usage": {
                            "prompt_tokens": p,
                            "completion_tokens": c,
                            "total_tokens": p + c,
                        },
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _event(self, data: str) -> None:
                raw = f"data: {data}\n\n".encode()
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                self.wfile.flush()

            def _chunk(
                self, delta: dict[str, Any], finish: str | None = None, usage: Any = None
            ) -> str:
                body: dict[str, Any] = {
                    "id": self._reply_id,
                    "object": "chat.completion.chunk",
                    "created": 1700000000,
                    "model": "loopback-model",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                if usage is not None:
                    body["choices"] = []
                    body["usage"] = usage
                return json.dumps(body)

            def _stream(self, reply: Reply) -> None:
                self._reply_id = reply.response_id
                self._event(self._chunk({"role": "assistant", "content": ""}))
                for sent, delta in enumerate(reply.deltas):
                    if reply.fail_after is not None and sent == reply.fail_after:
                        self._event(json.dumps({"error": {"message": reply.error or "broke"}}))
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                        return
                    if reply.stall_after is not None and sent == reply.stall_after:
                        time.sleep(reply.stall_for)
                        return
                    if reply.gate is not None and sent == reply.gate_at:
                        reply.gate.wait(60)
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._event(self._chunk(delta))
                if reply.midstream_error:
                    self._event(json.dumps({"error": {"message": reply.midstream_error,
                                                      "type": "server_error", "code": 500}}))  # fmt: skip
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                if reply.truncate:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                if reply.hang:
                    # Keep the stream open; a closed client shows up as a failed write.
                    for _ in range(600):
                        time.sleep(0.05)
                        self.wfile.write(b"1\r\n\n\r\n")
                        self.wfile.flush()
                    return
                self._event(self._chunk({}, reply.finish_reason))
                p, c = reply.usage
                usage = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
                self._event(self._chunk({}, usage={**usage, **reply.usage_details}))
                self._event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _anthropic(self, reply: Reply) -> None:
                """The reply as an Anthropic Messages stream (text deltas and usage)."""
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                p, c = reply.usage

                def event(name: str, data: dict[str, Any]) -> None:
                    raw = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                    self.wfile.flush()

                message = {
                    "id": "msg_loopback",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-loopback",
                    "content": [],
                    "stop_reason": None,
                    "usage": {"input_tokens": p, "output_tokens": 1, **reply.usage_details},
                }
                event("message_start", {"type": "message_start", "message": message})
                block = {"type": "text", "text": ""}
                event(
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": block},
                )
                for sent, delta in enumerate(reply.deltas):
                    if reply.stall_after is not None and sent == reply.stall_after:
                        time.sleep(reply.stall_for)
                        return
                    if reply.fail_after is not None and sent == reply.fail_after:
                        # Anthropic's own mid-stream failure: an error event, then the end.
                        kind = reply.error or "overloaded_error"
                        error = {"type": kind, "message": "Overloaded"}
                        event("error", {"type": "error", "error": error})
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                        return
                    piece = {"type": "text_delta", "text": delta.get("content", "")}
                    event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": piece},
                    )
                if reply.truncate:  # the body ends: no message_delta, no message_stop
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    return
                event("content_block_stop", {"type": "content_block_stop", "index": 0})
                stop = "end_turn" if reply.finish_reason == "stop" else reply.finish_reason
                event(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": stop, "stop_sequence": None},
                        "usage": {"output_tokens": c},
                    },
                )
                event("message_stop", {"type": "message_stop"})
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def api_base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def anthropic_base(self) -> str:
        """The ``api_base`` for ``model="anthropic/..."`` (litellm appends ``/v1/messages``)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def script(self, *replies: Reply) -> None:
        """Queue replies, one per request, in order (an unscripted request gets "ok")."""
        self.replies.extend(replies)

    def reset(self) -> None:
        self.requests.clear()
        self.replies.clear()
        self.disconnects = 0

    def bodies(self) -> list[dict[str, Any]]:
        """The recorded request bodies, parsed."""
        return [json.loads(b) for b in self.requests]

    def llm(self) -> dict[str, Any]:
        """The keyword arguments that point litellm at this server."""
        return {"model": "openai/loopback", "api_base": self.api_base, "api_key": "sk-loopback"}
