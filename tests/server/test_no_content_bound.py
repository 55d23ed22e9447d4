"""A provider that sends no content ends the chat within the server's bound (issue 36 part 6):
a real uvicorn process, the chat server's defaults with ``first_chunk`` scaled down through
its ``timeout=`` option (0.5 s instead of 35 s), and a loopback provider that, per session,
sends no first byte, headers then silence, SSE pings only, or a 1-byte trickle. Each chat
shows a ``data-retry`` part at once after each failed attempt (while it waits), tries
``max_retries + 1`` times, and ends with an ``error`` and a ``finish`` within the bound's
formula: attempts x first_chunk + the backoff."""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest

from helix_stream.models._retry import DEFAULT_MAX_RETRIES, RetryPolicy
from helix_stream.server import SERVER_TIMEOUT
from helix_stream.server._routes import NO_ANSWER_BOUND
from tests.server._live import server_process

FIRST_CHUNK = 0.5
MODES = ("no-first-byte", "headers-then-silence", "pings-only", "trickle")
ATTEMPTS = DEFAULT_MAX_RETRIES + 1


def worst_case(first_chunk: float) -> float:
    """Every attempt waits its whole first_chunk; every backoff is its longest (no jitter)."""
    policy = RetryPolicy()
    backoff = sum(
        min(policy.max_delay, policy.initial_delay * policy.backoff**k)
        for k in range(DEFAULT_MAX_RETRIES)
    )
    return ATTEMPTS * first_chunk + backoff


def test_the_defaults_end_a_silent_provider_within_two_minutes() -> None:
    assert SERVER_TIMEOUT.first_chunk is not None
    assert worst_case(SERVER_TIMEOUT.first_chunk) <= NO_ANSWER_BOUND == 120.0
    assert worst_case(120.0) > NO_ANSWER_BOUND  # the old default did not (about 366 s)


class Silent(BaseHTTPRequestHandler):
    """Answers each chat completion in the mode named by its last user message."""

    protocol_version = "HTTP/1.1"
    requests: ClassVar[Counter[str]] = Counter()
    stop = threading.Event()

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        mode = body["messages"][-1]["content"]
        if isinstance(mode, list):
            mode = mode[0]["text"]
        Silent.requests[mode] += 1
        try:
            if mode != "no-first-byte":
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
            line = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
            for i in range(2000):  # at most 100 s: the client has long gone
                if Silent.stop.wait(0.05):
                    return
                if mode == "pings-only":
                    ping = b": ping\n\n" if i % 2 else line + b'"delta":{"role":"assistant"}}]}\n\n'
                    self._send(ping)
                elif mode == "trickle":
                    self._send(line[i % len(line) : i % len(line) + 1])
        except OSError:
            return  # the client gave up: what the test expects

    def _send(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


APP = textwrap.dedent(
    """
    import sys, uvicorn
    import helix_stream as hs
    from helix_stream.server import SERVER_TIMEOUT, create_app

    port, api_base, first_chunk = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    agent = hs.Agent(name="chat", model="openai/silent",
                     settings={"api_base": api_base, "api_key": "k"})
    limits = hs.Timeout(first_chunk=first_chunk, chunk=SERVER_TIMEOUT.chunk)
    app = create_app(hs.Executor(store=hs.MemoryStore()), agent, timeout=limits)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="error")
    """
)


@pytest.fixture
def server() -> Iterator[str]:
    provider = ThreadingHTTPServer(("127.0.0.1", 0), Silent)
    provider.daemon_threads = True
    Silent.requests.clear()
    Silent.stop.clear()
    threading.Thread(target=provider.serve_forever, daemon=True).start()
    api_base = f"http://127.0.0.1:{provider.server_address[1]}/v1"
    try:
        with server_process(APP, api_base, str(FIRST_CHUNK)) as url:
            yield url
    finally:
        Silent.stop.set()
        provider.shutdown()
        provider.server_close()


async def chat(client: httpx.AsyncClient, mode: str) -> tuple[list[tuple[float, Any]], float]:
    """The chat's events with the second each arrived at, and how long the chat took."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": mode}]}
    body = {"id": f"s-{mode}", "trigger": "submit-message", "messages": [message]}
    started = time.monotonic()
    events: list[tuple[float, Any]] = []
    async with client.stream("POST", "/api/chat", json=body) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                data = line[6:]
                events.append(
                    (time.monotonic() - started, data if data == "[DONE]" else json.loads(data))
                )
    return events, time.monotonic() - started


async def test_each_silent_provider_ends_the_chat_within_the_bound_saying_it_retries(
    server: str,
) -> None:
    async with httpx.AsyncClient(base_url=server, timeout=60) as client:
        results = await asyncio.gather(*(chat(client, mode) for mode in MODES))
    for mode, (events, took) in zip(MODES, results, strict=True):
        assert took < worst_case(FIRST_CHUNK) + 2.0, (mode, took)
        types = [e if isinstance(e, str) else e["type"] for _, e in events]
        assert types[-4:] == ["error", "finish-step", "finish", "[DONE]"], (mode, types)
        assert "text-delta" not in types
        retries = [
            (at, e) for at, e in events if not isinstance(e, str) and e["type"] == "data-retry"
        ]
        assert [e["data"]["attempt"] for _, e in retries] == list(range(2, ATTEMPTS + 1)), mode
        for _, part in retries:
            assert part["transient"] is True
            assert part["data"]["reason"] == "no_answer" and part["data"]["attempts"] == ATTEMPTS
            assert part["data"]["message"].startswith("The model has not answered yet")
        # Sent while it waits, not at the end: the first right after the first attempt.
        assert retries[0][0] < FIRST_CHUNK + 1.5, (mode, retries[0][0])
        # The provider saw the retries (the last one may not have reached it in 0.5 s on a
        # loaded machine: the attempt's clock starts before the connection is made).
        assert Silent.requests[mode] >= ATTEMPTS - 1, (mode, Silent.requests)
