"""UIMessageStreamResponse: SSE framing, headers, pings, and cancellation on disconnect."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from helix_stream.chunks import (
    ContextRowChunk,
    Finish,
    FinishStep,
    StartStep,
    TextDelta,
    TextEnd,
    TextStart,
)
from helix_stream.transformers import (
    UI_MESSAGE_STREAM_HEADERS,
    UIMessageStreamResponse,
    UIStreamFinish,
    encode_sse,
    to_ui_message_stream,
)

_CHUNKS = [
    StartStep(step_number=0),
    ContextRowChunk(row={"content": "never on the wire"}),
    TextStart(id="t"),
    TextDelta(id="t", delta="Grüße 👋"),
    TextEnd(id="t"),
    FinishStep(step_number=0, finish_reason="stop"),
    Finish(finish_reason="stop"),
]


async def _scripted(delay: float = 0.0) -> AsyncIterator[Any]:
    for chunk in _CHUNKS:
        if delay:
            await asyncio.sleep(delay)
        yield chunk


def _app(make_response: Callable[[], Response]) -> Starlette:
    async def chat(request: Request) -> Response:
        await request.body()
        return make_response()

    return Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


async def _post(app: Starlette) -> httpx.Response:
    # httpx's ASGITransport runs the app to completion and buffers the body: fine for
    # framing and headers; streaming and disconnects are tested on a real socket below.
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.post("/api/chat", json={"messages": []})


def _events(body: str) -> list[str]:
    assert body.endswith("\n\n")
    return body[:-2].split("\n\n")


def _data(body: str) -> list[Any]:
    out: list[Any] = []
    for event in _events(body):
        if event.startswith(":"):
            continue
        assert event.startswith("data: ")
        payload = event.removeprefix("data: ")
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def test_encode_sse_is_one_compact_utf8_event() -> None:
    assert encode_sse({"type": "text-delta", "id": "t", "delta": "a\nb é"}) == (
        'data: {"type":"text-delta","id":"t","delta":"a\\nb é"}\n\n'
    )


async def test_headers_and_data_events_end_with_done() -> None:
    app = _app(lambda: UIMessageStreamResponse(to_ui_message_stream(_scripted())))
    response = await _post(app)
    assert response.status_code == 200
    assert {k: response.headers[k] for k in UI_MESSAGE_STREAM_HEADERS} == {
        "content-type": "text/event-stream",
        "cache-control": "no-cache",
        "connection": "keep-alive",
        "x-vercel-ai-ui-message-stream": "v1",
        "x-accel-buffering": "no",
    }
    assert response.content.decode() == (
        'data: {"type":"start"}\n\n'
        'data: {"type":"start-step"}\n\n'
        'data: {"type":"text-start","id":"t"}\n\n'
        'data: {"type":"text-delta","id":"t","delta":"Grüße 👋"}\n\n'
        'data: {"type":"text-end","id":"t"}\n\n'
        'data: {"type":"finish-step"}\n\n'
        'data: {"type":"finish","finishReason":"stop"}\n\n'
        "data: [DONE]\n\n"
    )


async def test_status_and_extra_headers() -> None:
    app = _app(
        lambda: UIMessageStreamResponse(
            to_ui_message_stream(_scripted()),
            status_code=201,
            headers={"X-Request-Id": "r1"},
        )
    )
    response = await _post(app)
    assert response.status_code == 201
    assert response.headers["x-request-id"] == "r1"
    assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert _data(response.text)[-1] == "[DONE]"


async def test_pings_are_sse_comments_between_events() -> None:
    app = _app(
        lambda: UIMessageStreamResponse(to_ui_message_stream(_scripted(0.12)), ping_interval=0.05)
    )
    response = await _post(app)
    events = _events(response.text)
    pings = [e for e in events if e.startswith(":")]
    assert len(pings) >= 3
    assert set(pings) == {": ping"}
    assert events[-1] == "data: [DONE]"
    assert [d["type"] for d in _data(response.text)[:-1]] == [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]


async def test_no_pings_when_the_interval_is_zero() -> None:
    app = _app(
        lambda: UIMessageStreamResponse(to_ui_message_stream(_scripted(0.05)), ping_interval=0)
    )
    response = await _post(app)
    assert ":" not in [e[0] for e in _events(response.text)]


async def test_a_raising_chunk_iterator_ends_with_one_masked_error_then_done() -> None:
    async def chunks() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "start"}
        raise RuntimeError("secret internals")

    response = await _post(_app(lambda: UIMessageStreamResponse(chunks())))
    assert _data(response.text) == [
        {"type": "start"},
        {"type": "error", "errorText": "An error occurred."},
        "[DONE]",
    ]
    assert "secret" not in response.text


class _Probe:
    """A slow source that records how it ended (from whichever thread runs it)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.ended = threading.Event()
        self.task: asyncio.Task[Any] | None = None
        self.finished: list[UIStreamFinish] = []

    async def source(self) -> AsyncIterator[Any]:
        self.task = asyncio.current_task()
        try:
            yield StartStep(step_number=0)
            yield TextStart(id="t")
            yield TextDelta(id="t", delta="first")
            await asyncio.sleep(3600)  # the model is slow; the client gives up
            yield Finish(finish_reason="stop")
        except asyncio.CancelledError:
            self.events.append("cancelled")
            raise
        except GeneratorExit:
            self.events.append("closed")
            raise
        finally:
            self.events.append("finally")
            self.ended.set()

    async def on_finish(self, result: UIStreamFinish) -> None:
        # Awaits after the disconnect: a second cancellation (an anyio scope, a shutdown) would cancel this
        # again unless the transformer shields its cleanup.
        await asyncio.sleep(0.01)
        self.finished.append(result)

    def response(self) -> UIMessageStreamResponse:
        return UIMessageStreamResponse(
            to_ui_message_stream(self.source(), on_finish=self.on_finish)
        )


async def test_a_disconnect_cancels_the_source_asgi_level() -> None:
    probe = _Probe()
    sent: list[MutableMapping[str, Any]] = []
    first_text = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if not sent:
            return {"type": "http.request", "body": b"", "more_body": False}
        await first_text.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if b"first" in message.get("body", b""):
            first_text.set()

    scope = {"type": "http", "method": "POST", "path": "/api/chat", "headers": []}
    await asyncio.wait_for(probe.response()(scope, receive, send), timeout=5)
    assert probe.events == ["cancelled", "finally"]
    assert probe.finished[0].is_aborted is True
    assert probe.finished[0].message["parts"][1] == {
        "type": "text",
        "text": "first",
        "state": "streaming",
    }
    assert not any(b"[DONE]" in m.get("body", b"") for m in sent)


@pytest.fixture
def live_server() -> Iterator[tuple[str, _Probe]]:
    """A real uvicorn server on 127.0.0.1 (in a thread) serving one slow stream."""
    probe = _Probe()
    app = _app(probe.response)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", probe
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


async def test_a_client_disconnect_over_a_real_socket_cancels_the_generation(
    live_server: tuple[str, _Probe],
) -> None:
    url, probe = live_server
    received: list[str] = []
    async with (
        httpx.AsyncClient(timeout=5) as client,
        client.stream("POST", f"{url}/api/chat", json={"messages": []}) as response,
    ):
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        async for line in response.aiter_lines():
            received.append(line)
            if "first" in line:
                break  # the user closes the tab
    assert received[-1] == 'data: {"type":"text-delta","id":"t","delta":"first"}'
    assert await asyncio.to_thread(probe.ended.wait, 5), "the source was never closed"
    assert probe.events == ["cancelled", "finally"]
    deadline = time.monotonic() + 5
    while probe.task is not None and not probe.task.done():
        assert time.monotonic() < deadline, "the generation task is still running"
        await asyncio.sleep(0.01)
    assert probe.finished[0].is_aborted is True


def test_a_negative_ping_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="ping_interval"):
        UIMessageStreamResponse(to_ui_message_stream(_scripted()), ping_interval=-1)


async def test_a_send_that_fails_for_a_gone_client_closes_the_source() -> None:
    # ASGI 2.4 servers raise OSError from send once the client is gone.
    probe = _Probe()
    bodies: list[bytes] = []
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.body":
            if b"first" in message["body"]:
                raise OSError("the client is gone")
            bodies.append(message["body"])

    scope = {"type": "http", "method": "POST", "path": "/api/chat", "headers": []}
    await asyncio.wait_for(probe.response()(scope, receive, send), timeout=5)
    assert probe.ended.is_set() and probe.events[-1] == "finally"
    assert probe.finished[0].is_aborted is True
    assert not any(b"[DONE]" in body for body in bodies)


async def _gated(gate: asyncio.Event, seen: list[str]) -> AsyncIterator[Any]:
    yield StartStep(step_number=0)
    yield TextStart(id="t")
    yield TextDelta(id="t", delta="first")
    await gate.wait()
    seen.append("read on")
    yield TextDelta(id="t", delta=" second")
    yield Finish(finish_reason="stop")
    seen.append("ended")


def _asgi(sent: list[MutableMapping[str, Any]], gone: asyncio.Event) -> tuple[Any, Any]:
    async def receive() -> dict[str, Any]:
        if not sent:
            return {"type": "http.request", "body": b"", "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if b"first" in message.get("body", b""):
            gone.set()  # the client leaves right after the first text

    return receive, send


async def test_on_disconnect_continue_reads_the_source_to_its_end_and_sends_nothing_more() -> None:
    gate, seen, sent, gone = asyncio.Event(), [], [], asyncio.Event()
    receive, send = _asgi(sent, gone)
    response = UIMessageStreamResponse(
        to_ui_message_stream(_gated(gate, seen)), on_disconnect="continue"
    )
    scope = {"type": "http", "method": "POST", "path": "/api/chat", "headers": []}
    call = asyncio.ensure_future(response(scope, receive, send))
    await gone.wait()
    await asyncio.sleep(0.05)
    assert not call.done()  # the client has gone; the generation has not
    count = len(sent)
    gate.set()
    await asyncio.wait_for(call, 5)
    assert seen == ["read on", "ended"]
    assert len(sent) == count  # nothing was sent to the client that left, not even [DONE]


async def test_on_disconnect_continue_is_bounded_by_detached_timeout() -> None:
    gate, seen, sent, gone = asyncio.Event(), [], [], asyncio.Event()
    receive, send = _asgi(sent, gone)
    response = UIMessageStreamResponse(
        to_ui_message_stream(_gated(gate, seen)), on_disconnect="continue", detached_timeout=0.1
    )
    scope = {"type": "http", "method": "POST", "path": "/api/chat", "headers": []}
    await asyncio.wait_for(response(scope, receive, send), 5)  # gate never opens
    assert seen == []


def test_on_disconnect_is_cancel_or_continue() -> None:
    with pytest.raises(ValueError, match="on_disconnect"):
        UIMessageStreamResponse(to_ui_message_stream(_scripted()), on_disconnect="ignore")  # type: ignore[arg-type]
