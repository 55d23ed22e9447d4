"""A loopback server that replays fixed response bodies, cut at awkward byte boundaries.

Each ``POST`` gets the next queued body as a chunked ``text/event-stream`` response, written in
pieces of 1, 7, 3, 64, 2, 13, ... bytes (flushed one by one), so that a reader meets lines,
events and UTF-8 characters cut anywhere. Point litellm at it with ``llm()`` (``openai/x``) or
``anthropic_llm()``.

:func:`read_turn` reads one turn through litellm's stream wrapper or helix's direct reader;
:func:`record_readers` records which reader each stream got.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.models import _lean_stream

CUTS = (1, 7, 3, 64, 2, 13, 5, 200, 11)


def pieces(body: bytes) -> Iterator[bytes]:
    """``body`` in the pieces the server writes."""
    start, turn = 0, 0
    while start < len(body):
        size = CUTS[turn % len(CUTS)]
        yield body[start : start + size]
        start, turn = start + size, turn + 1


class ReplayServer:
    """Serves queued bodies on 127.0.0.1 (a background thread); records the request bodies."""

    def __init__(self) -> None:
        self.bodies: deque[bytes] = deque()
        self.requests: list[bytes] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server.requests.append(self.rfile.read(int(self.headers["content-length"])))
                body = server.bodies.popleft()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for piece in pieces(body):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def llm(self) -> dict[str, Any]:
        """litellm's arguments for an OpenAI-compatible server (helix's defaults otherwise)."""
        return {"model": "openai/x", "api_base": f"{self.base_url}/v1", "api_key": "sk-replay"}

    def anthropic_llm(self) -> dict[str, Any]:
        return {
            "model": "anthropic/claude-sonnet-4-5",
            "api_base": self.base_url,
            "api_key": "sk-ant-replay",
        }

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def record_readers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The direct reader made for each stream from now on (``None`` where litellm kept it)."""
    made: list[Any] = []
    original = _lean_stream.direct_stream

    def spy(*args: Any, **kwargs: Any) -> Any:
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(_lean_stream, "direct_stream", spy)
    return made


async def read_turn(llm: dict[str, Any], *, direct: bool, **kw: Any) -> Any:
    """One single-step turn: (its chunks but ``Start``, its steps), or ``("error", type, text)``.

    ``direct=False`` leaves litellm's stream exactly as litellm makes it (what a registered
    callback gets); ``direct=True`` is helix's default. Every delta must be a string.
    """
    _lean_stream.enabled = direct
    result = hs.stream_text(**llm, max_retries=0, stop_when=hs.step_count_is(1), **kw)
    try:
        out = [x for x in [chunk async for chunk in result] if not isinstance(x, hs.chunks.Start)]
        steps = await result.steps()
    except hs.errors.HelixError as exc:
        return ("error", type(exc), str(exc))
    finally:
        _lean_stream.enabled = True
    assert all(isinstance(getattr(x, "delta", ""), str) for x in out), out
    return out, steps
