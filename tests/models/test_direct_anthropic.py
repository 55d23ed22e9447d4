"""helix reads an Anthropic Messages stream's body itself, with litellm's results.

Scripted Messages streams are replayed from a loopback server, cut at awkward byte boundaries,
and read by ``hs.stream_text`` through litellm's own wrapper and through the direct reader:
the chunks, the step (text, reasoning, tool calls, finish reason, usage with the cache
counters, response model) and the errors are the same. litellm keeps the streams it reshapes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.models._direct_anthropic import AnthropicStream
from helix_stream.models._litellm import acompletion
from tests.models._replay import ReplayServer, read_turn


def event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def start(usage: dict[str, Any] | None = None) -> str:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-served",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": usage or {"input_tokens": 20, "output_tokens": 1}}  # fmt: skip
    return event({"type": "message_start", "message": message})


def block(index: int, content_block: dict[str, Any], *deltas: dict[str, Any]) -> str:
    out = [event({"type": "content_block_start", "index": index, "content_block": content_block})]
    out += [event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    return "".join(out) + event({"type": "content_block_stop", "index": index})


def text(index: int, *pieces: str) -> str:
    return block(
        index, {"type": "text", "text": ""}, *[{"type": "text_delta", "text": p} for p in pieces]
    )


def tool(index: int, call_id: str, name: str, *pieces: str) -> str:
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    return block(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}, *deltas)


def end(reason: str | None, usage: dict[str, Any] | None = None) -> str:
    delta = {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None}}
    return event({**delta, **({"usage": usage} if usage is not None else {})}) + event(
        {"type": "message_stop"}
    )


PING = event({"type": "ping"})
CACHED = {"input_tokens": 20, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 30,
          "output_tokens": 1}  # fmt: skip
CITATION = {"type": "citations_delta", "citation": {"type": "web_search_result_location",
            "url": "https://a.example/", "title": "A", "cited_text": "x", "encrypted_index": "e"}}  # fmt: skip

STREAMS = {
    "text with cache usage": start(CACHED) + PING + text(0, "Hello ", "wor", "ld") + end("end_turn", {"output_tokens": 7}),
    "thinking, redacted thinking, citations and tools": (
        start(CACHED)
        + block(0, {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": "Let me "}, {"type": "thinking_delta", "thinking": "think"},
                {"type": "signature_delta", "signature": "sig=="})
        + block(1, {"type": "redacted_thinking", "data": "opaque"})
        + block(2, {"type": "text", "text": ""}, {"type": "text_delta", "text": "See "}, CITATION,
                {"type": "text_delta", "text": "this."})
        + tool(3, "toolu_1", "weather", "", '{"city": ', '"Paris"}')
        + tool(4, "toolu_2", "now")
        + tool(5, "toolu_3", "empty", "", "")
        + end("tool_use", {"output_tokens": 42})
    ),
    "a long answer stopped at max_tokens": start() + text(0, *[f"w{i} " for i in range(50)]) + end("max_tokens", {"output_tokens": 50}),
    "usage in the message_delta too": start() + text(0, "Hi") + end("end_turn", {"output_tokens": 3, "input_tokens": 7, "cache_read_input_tokens": 2}),
    "no usage in the message_delta": start() + text(0, "Hi") + end("end_turn"),
    "a stop sequence, end_turn after a tool call": (
        start() + tool(0, "toolu_9", "lookup", '{"q": 1}') + end("end_turn", {"output_tokens": 9})
    ),
    "server tool blocks and an unknown event": (
        start()
        + block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                {"type": "input_json_delta", "partial_json": '{"query": "x"}'})
        + block(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []})
        + event({"type": "future_event", "x": 1})
        + text(2, "Found it.")
        + end("end_turn", {"output_tokens": 12, "server_tool_use": {"web_search_requests": 1}})
    ),
    "a non-ascii answer": start() + text(0, "Voilà, ", "ça ", "marche 😊") + end("end_turn", {"output_tokens": 5}),
    # A refusal with its explanation in stop_details (Claude's streaming classifiers).
    "a refusal with its explanation": start() + text(0, "I was ") + event(
        {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": None,
         "stop_details": {"type": "refusal", "category": "cyber", "explanation": "This request may violate the usage policy."}},
         "usage": {"output_tokens": 3}}) + event({"type": "message_stop"}),
}  # fmt: skip

FAILURES = {
    "an error event": start()
    + text(0, "Half")
    + event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    "a body cut short": start() + text(0, "Half"),
    "an error event first": event(
        {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    ),
}


async def read(replay: ReplayServer, body: str, *, direct: bool) -> Any:
    replay.bodies.append(body.encode())
    return await read_turn(replay.anthropic_llm(), direct=direct, prompt="go")


@pytest.mark.parametrize("name", STREAMS)
async def test_the_chunks_and_steps_are_litellms(
    replay: ReplayServer, readers: list[Any], name: str
) -> None:
    wrapped = await read(replay, STREAMS[name], direct=False)
    assert readers == [] and wrapped[0] != "error", wrapped
    direct = await read(replay, STREAMS[name], direct=True)
    assert len(readers) == 1 and isinstance(readers[0], AnthropicStream)
    assert direct == wrapped


async def test_usage_cache_counters_model_and_sources(replay: ReplayServer) -> None:
    out, steps = await read(
        replay, STREAMS["thinking, redacted thinking, citations and tools"], direct=True
    )
    step = steps[0]
    # litellm adds the cache reads and writes into the prompt tokens; reasoning tokens are
    # counted from the thinking text.
    assert (step.usage.input_tokens, step.usage.output_tokens, step.usage.total_tokens) == (
        150,
        42,
        192,
    )
    assert (step.usage.cached_input_tokens, step.usage.cache_creation_input_tokens) == (100, 30)
    assert step.usage.reasoning_tokens > 0
    assert step.response_model == "claude-sonnet-4-5"  # the name litellm puts on its chunks
    assert (step.text, step.reasoning, step.finish_reason) == (
        "See this.",
        "Let me think",
        "tool-calls",
    )
    assert [(t.id, t.name, t.input) for t in step.tool_calls] == [
        ("toolu_1", "weather", {"city": "Paris"}), ("toolu_2", "now", {}), ("toolu_3", "empty", {}),
    ]  # fmt: skip
    assert [(x.url, x.title) for x in out if isinstance(x, c.SourceUrl)] == [
        ("https://a.example/", "A")
    ]


@pytest.mark.parametrize("name", FAILURES)
async def test_a_failure_raises_what_litellm_raises(
    replay: ReplayServer, readers: list[Any], name: str
) -> None:
    wrapped = await read(replay, FAILURES[name], direct=False)
    direct = await read(replay, FAILURES[name], direct=True)
    assert isinstance(readers[-1], AnthropicStream)
    assert wrapped[0] == "error" and issubclass(wrapped[1], hs.errors.ModelError)
    assert direct == wrapped


async def test_litellm_keeps_a_json_mode_stream(replay: ReplayServer, readers: list[Any]) -> None:
    body = (
        start()
        + tool(0, "toolu_j", "json_tool_call", '{"city": "Oslo"}')
        + end("tool_use", {"output_tokens": 4})
    )
    replay.bodies.append(body.encode())
    stream = await acompletion(direct=True, stream=True, messages=[{"role": "user", "content": "x"}],
                               response_format={"type": "json_object"}, **replay.anthropic_llm())  # fmt: skip
    assert not isinstance(stream, AnthropicStream)
    async for _ in stream:
        pass
    assert readers == [None]


async def test_closing_early_closes_the_response(replay: ReplayServer) -> None:
    replay.bodies.append(
        (start() + text(0, "a", "b") + end("end_turn", {"output_tokens": 2})).encode()
    )
    stream = await acompletion(direct=True, stream=True, messages=[{"role": "user", "content": "x"}],
                               **replay.anthropic_llm())  # fmt: skip
    assert isinstance(stream, AnthropicStream)
    await anext(aiter(stream))
    await stream.aclose()
    assert stream._response.is_closed


async def test_a_refusal_shows_its_explanation_on_both_paths(replay: ReplayServer) -> None:
    for direct in (False, True):
        _, steps = await read(replay, STREAMS["a refusal with its explanation"], direct=direct)
        assert steps[0].text == "I was This request may violate the usage policy.", direct


@pytest.mark.parametrize("where", ["message_start", "message_delta"])
async def test_the_answers_cache_diagnostics_reach_the_ledger(
    replay: ReplayServer, where: str
) -> None:
    miss = {"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 512}}
    opening = start(CACHED)
    closing = end("end_turn", {"output_tokens": 3})
    if where == "message_start":
        opening = opening.replace(
            '"type": "message", ', f'"diagnostics": {json.dumps(miss)}, "type": "message", '
        )
    else:
        closing = event({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                         "usage": {"output_tokens": 3}, "diagnostics": miss}) + event({"type": "message_stop"})  # fmt: skip
    replay.bodies.append((opening + text(0, "Hi") + closing).encode())
    result = await hs.generate_text(**replay.anthropic_llm(), prompt="go")
    ledger = result.steps[0].cache
    assert ledger is not None
    assert (ledger.miss_reason, ledger.missed_tokens) == ("tools_changed", 512)
    assert (ledger.read_tokens, ledger.write_tokens) == (100, 30)
