"""The sync entry points: for code without an event loop; refused inside a running one."""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest

import helix_stream as hs
from tests.loopback import LoopbackServer, text


def _in_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a new thread (no event loop there), its result or its error."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(60)
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_generate_text_sync_in_a_plain_thread(loopback: LoopbackServer) -> None:
    loopback.script(text("Hello there"))
    out = _in_thread(lambda: hs.generate_text_sync(**loopback.llm(), prompt="hi"))
    assert isinstance(out, hs.GenerateTextResult)
    assert out.text == "Hello there" and out.finish_reason == "stop"
    assert out.usage.output_tokens > 0 and len(out.steps) == 1


async def test_stream_text_sync_yields_the_chunks_the_async_form_does(
    loopback: LoopbackServer,
) -> None:
    loopback.script(text("one two"), text("one two"))
    expected = [type(c).__name__ async for c in hs.stream_text(**loopback.llm(), prompt="hi")]

    def read() -> tuple[list[str], str, int, int]:
        result = hs.stream_text_sync(**loopback.llm(), prompt="hi")
        names = [type(c).__name__ for c in result]
        return names, result.text, len(result.steps), result.usage.output_tokens

    names, said, steps, tokens = _in_thread(read)
    assert names == expected and said == "one two" and steps == 1 and tokens > 0


def test_a_sync_streams_properties_run_it_to_its_end(loopback: LoopbackServer) -> None:
    loopback.script(text("all of it"))
    result = hs.stream_text_sync(**loopback.llm(), prompt="hi")
    assert result.text == "all of it" and len(loopback.requests) == 1


def test_executor_run_sync_returns_the_finished_turn(loopback: LoopbackServer) -> None:
    llm = loopback.llm()
    agent = hs.Agent(name="sync", model=llm.pop("model"), settings=llm)
    executor = hs.Executor()
    loopback.script(text("first"), text("second"))
    first = _in_thread(lambda: executor.run_sync(agent, "s", "a"))
    second = executor.run_sync(agent, "s", "b")
    assert (first.text, second.text) == ("first", "second")
    sent = loopback.bodies()[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]  # one session


def test_in_a_sync_wsgi_view(loopback: LoopbackServer) -> None:
    # A Django-style sync view: each request runs in a worker thread without an event loop.
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        out = hs.generate_text_sync(**loopback.llm(), prompt=environ["QUERY_STRING"])
        start_response("200 OK", [("content-type", "application/json")])
        yield json.dumps({"text": out.text}).encode()

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        loopback.script(text("from the view"))
        url = f"http://127.0.0.1:{server.server_port}/?hello"
        with urllib.request.urlopen(url, timeout=30) as answer:
            assert json.loads(answer.read()) == {"text": "from the view"}
    finally:
        server.shutdown()
        server.server_close()
    assert loopback.bodies()[0]["messages"][-1]["content"] == "hello"


async def test_each_sync_form_is_refused_inside_a_running_loop_naming_the_async_one(
    loopback: LoopbackServer,
) -> None:
    llm = loopback.llm()
    agent = hs.Agent(name="sync", model=llm.pop("model"), settings=llm)
    forms: list[tuple[Callable[[], Any], str]] = [
        (lambda: hs.generate_text_sync(**loopback.llm(), prompt="x"), "await hs.generate_text"),
        (lambda: hs.stream_text_sync(**loopback.llm(), prompt="x"), "hs.stream_text("),
        (lambda: hs.Executor().run_sync(agent, "s", "x"), "executor.run("),
    ]
    for call, named in forms:
        with pytest.raises(RuntimeError, match="inside a running event loop") as info:
            call()
        assert named in str(info.value)
    assert loopback.requests == []


def test_wrap_completion_is_the_sync_drop_in(loopback: LoopbackServer) -> None:
    import litellm

    completion = hs.wrap_completion(litellm.completion, [hs.default_settings(temperature=0.3)])
    loopback.script(text("streamed", pieces=2), text("whole"))
    llm = loopback.llm()
    messages = [{"role": "user", "content": "x"}]
    stream = completion(messages=messages, stream=True, **llm)
    parts = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    response = completion(messages=messages, **llm)
    assert "".join(parts) == "streamed"
    assert response.choices[0].message.content == "whole"
    assert [b["temperature"] for b in loopback.bodies()] == [0.3, 0.3]


def test_each_drop_in_refuses_the_other_kind_at_wrap_time() -> None:
    import litellm

    with pytest.raises(TypeError, match=r"hs\.wrap_completion"):
        hs.wrap_acompletion(litellm.completion, [])
    with pytest.raises(TypeError, match=r"hs\.wrap_acompletion"):
        hs.wrap_completion(litellm.acompletion, [])
