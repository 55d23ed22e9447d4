"""A loopback HTTP server base for provider wire formats: real HTTP, recorded bodies, scripts.

Each provider module subclasses :class:`WireServer` and writes a scripted :class:`Say` in that
provider's streaming format. Requests are recorded byte for byte (path, headers, body), which
is what the prefix and envelope assertions read.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Say:
    """One scripted model turn: text, and/or tool calls ``(name, arguments)``."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


def pieces(body: bytes, cuts: tuple[int, ...]) -> Iterator[bytes]:
    """``body`` in pieces of the sizes ``cuts`` names, over and over."""
    start, turn = 0, 0
    while start < len(body):
        size = cuts[turn % len(cuts)]
        yield body[start : start + size]
        start, turn = start + size, turn + 1


class WireServer:
    """Serves every POST from the script on 127.0.0.1 (a background thread).

    With :attr:`cuts` set, a response is written chunked, in pieces of those sizes, each
    flushed on its own (a reader then meets lines and events cut anywhere).
    """

    content_type = "text/event-stream"
    cuts: tuple[int, ...] | None = None
    status = 200  # an error status answers with the rendered body as JSON

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.replies: deque[Say] = deque()
        self.calls = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = self.rfile.read(length)
                with server._lock:
                    recorded = Recorded(self.path, dict(self.headers), body)
                    server.requests.append(recorded)
                    reply = server.replies.popleft() if server.replies else Say(text="ok")
                    server.calls += 1
                    number = server.calls
                payload = server.render(recorded, reply, number)
                self.send_response(server.status)
                kind = server.content_type if server.status == 200 else "application/json"
                self.send_header("content-type", kind)
                if server.cuts is None:
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                    return
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for piece in pieces(payload, server.cuts):  # each piece flushed on its own
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def render(self, request: Recorded, reply: Say, number: int) -> bytes:
        """The whole streamed response to ``request`` (the subclass's wire format)."""
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def script(self, *replies: Say) -> None:
        """Queue replies, one per request, in order (an unscripted request gets "ok")."""
        self.replies.extend(replies)

    def reset(self) -> None:
        self.requests.clear()
        self.replies.clear()

    def bodies(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.requests]


def sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    """Server-sent events: ``event:`` (when named) and one ``data:`` JSON line each."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(out).encode()
