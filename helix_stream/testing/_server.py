"""The HTTP server a scripted model answers from: 127.0.0.1, a thread of its own.

This module owns the loopback server: it records each request body as the provider's server
would have received it, asks its owner for the reply (``reply_for(body)``) and writes it in the
wire format (:mod:`._wire`): an HTTP error, or a stream that may stall or be cut.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._replies import Reply
from ._wire import Wire, error_body, events, whole

__all__ = ["ScriptServer"]

_GONE = (BrokenPipeError, ConnectionResetError)


class ScriptServer:
    """Serves one wire family's streaming endpoint from ``reply_for``; started at once."""

    def __init__(self, wire: Wire, reply_for: Callable[[dict[str, Any]], Reply | str]) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with owner._lock:
                    owner.requests.append(body)
                reply = reply_for(body)
                try:
                    if isinstance(reply, str):  # no reply: a refusal that says why
                        self._json(400, {"error": {"message": reply, "type": "scripted"}})
                    elif reply.error is not None:
                        self._json(reply.error, error_body(reply.error, wire))
                    elif not body.get("stream"):  # a call without a stream: one JSON answer
                        time.sleep(reply.stall)
                        self._json(200, whole(reply, wire))
                    else:
                        self._stream(reply)
                except _GONE:
                    pass  # the client left (a timeout): nothing to tell it

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.send_header("retry-after-ms", "10")  # a retried test call waits little
                self.end_headers()
                self.wfile.write(raw)

            def _stream(self, reply: Reply) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                first, *rest = events(reply, wire)
                self._write(first)
                if reply.stall:
                    time.sleep(reply.stall)
                if reply.cut_after is not None:
                    rest = rest[: reply.cut_after]
                for event in rest:
                    self._write(event)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _write(self, event: bytes) -> None:
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def origin(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
