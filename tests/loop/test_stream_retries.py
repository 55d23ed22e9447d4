"""Recovery mid-answer (``stream_retries``), on the wire: loopback servers cut an answer after
40 words, then answer the retry; the stored message and the UI stream are one answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.errors import InvalidRequestError, ModelUnavailableError
from helix_stream.models._family import provider_family
from helix_stream.models._prefill import prefill_request
from helix_stream.transformers._fold import UIMessageFold
from tests.loopback import LoopbackServer, Reply

WORDS = [f"word{i}" for i in range(60)]
ANSWER = " ".join(WORDS) + "."
USER = [{"role": "user", "content": "Count to sixty, in words."}]


def cut_then_continue(*, lead_space: bool) -> tuple[Reply, Reply]:
    """The first 40 words then a provider error; the continuation of the rest."""
    first = Reply(deltas=[{"content": w + " "} for w in WORDS], fail_after=40)
    # A model continuing "... word39" (the prefill lost its trailing space) starts with one.
    rest = [(" " if lead_space or i else "") + w for i, w in enumerate(WORDS[40:])]
    return first, Reply(deltas=[{"content": piece} for piece in [*rest, "."]])


def strip_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def texts(messages: list[dict[str, Any]]) -> list[Any]:
    return [strip_markers(m["content"]) for m in messages]


def shown_text(ui: list[dict[str, Any]]) -> str:
    """What an ai@7 client shows: the UI chunks folded as ``readUIMessageStream`` does."""
    fold = UIMessageFold()
    for chunk in ui:
        fold.add(chunk)
    return "".join(p["text"] for p in fold.message["parts"] if p["type"] == "text")


def raw_messages(body: bytes) -> str:
    """The request's ``messages`` array exactly as it went over the wire."""
    text = body.decode()
    start = text.index("[", text.index('"messages"'))
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end]


def assert_prefix_kept(first: bytes, second: bytes) -> None:
    """The retried request's messages start with the failed one's, byte for byte."""
    before, after = raw_messages(first), raw_messages(second)
    assert after.startswith(before[:-1]), (before, after)


def assert_one_answer(text: str) -> None:
    assert text == ANSWER
    assert all(text.count(f"{w} ") + text.count(f"{w}.") == 1 for w in WORDS)


async def test_anthropic_continues_from_the_text_shown(loopback: LoopbackServer) -> None:
    loopback.script(*cut_then_continue(lead_space=True))
    result = hs.stream_text(
        model="anthropic/claude-sonnet-4-5",
        api_base=loopback.anthropic_base,
        api_key="sk-loopback",
        messages=USER,
        stream_retries=1,
    )
    ui = [c async for c in result.to_ui_message_stream(client_version=7)]
    assert result.error is None
    assert_one_answer(shown_text(ui))
    assert not any(c["type"] in ("reset-step", "error") for c in ui)
    assert [c["type"] for c in ui].count("text-start") == 1
    steps = await result.steps()
    assert_one_answer(steps[-1].text)
    assert steps[-1].response_messages[0]["content"] == ANSWER
    assert_prefix_kept(*loopback.requests)
    first, second = loopback.bodies()
    # The prefill: the failed request's messages unchanged, then the 40 words shown (without
    # the trailing space Anthropic refuses).
    assert texts(second["messages"][:-1]) == texts(first["messages"])
    assert second["messages"][-1]["role"] == "assistant"
    prefill = strip_markers(second["messages"][-1]["content"])
    prefill_text = prefill if isinstance(prefill, str) else prefill[0]["text"]
    assert prefill_text == " ".join(WORDS[:40])
    # The failed attempt's usage counts (Anthropic reported its input at message_start).
    assert steps[-1].usage.input_tokens == 20


async def test_an_openai_compatible_server_continues_the_final_assistant_message(
    loopback: LoopbackServer,
) -> None:
    first = Reply(deltas=[{"content": w + " "} for w in WORDS[:40]], midstream_error="overloaded")
    rest = Reply(deltas=[{"content": w + " "} for w in WORDS[40:-1]] + [{"content": "word59."}])
    loopback.script(first, rest)
    result = hs.stream_text(**loopback.llm(), messages=USER, stream_retries=1)
    ui = [c async for c in result.to_ui_message_stream(client_version=7)]
    assert result.error is None
    assert_one_answer(shown_text(ui))
    assert_one_answer(await result.text())
    one, two = loopback.requests
    body = json.loads(two)
    assert body["messages"][:-1] == json.loads(one)["messages"]
    assert body["messages"][-1] == {"role": "assistant", "content": " ".join(WORDS[:40]) + " "}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert_prefix_kept(one, two)  # the earlier content is byte-identical on the wire


async def test_stream_retries_0_keeps_the_failure(loopback: LoopbackServer) -> None:
    loopback.script(*cut_then_continue(lead_space=True))
    result = hs.stream_text(
        model="anthropic/claude-sonnet-4-5",
        api_base=loopback.anthropic_base,
        api_key="sk-loopback",
        messages=USER,
    )
    ui = [c async for c in result.to_ui_message_stream(client_version=7)]
    assert isinstance(result.error, ModelUnavailableError)
    assert len(loopback.requests) == 1
    assert shown_text(ui) == " ".join(WORDS[:40]) + " "
    assert ui[-1] == {"type": "finish", "finishReason": "error"}


async def test_a_family_without_prefill_redoes_the_step_with_reset_step(
    loopback: LoopbackServer,
) -> None:
    llm = {**loopback.llm(), "model": "mistral/mistral-large-latest"}
    assert provider_family(llm["model"], api_base=llm["api_base"]) == "mistral"
    first = Reply(deltas=[{"content": w + " "} for w in WORDS[:40]], midstream_error="overloaded")
    again = Reply(deltas=[{"content": w + " "} for w in WORDS[:-1]] + [{"content": "word59."}])
    loopback.script(first, again)
    ended: list[hs.ModelCallEndEvent] = []
    result = hs.stream_text(**llm, messages=USER, stream_retries=1, on_model_call_end=ended.append)
    ui = [c async for c in result.to_ui_message_stream(client_version=7)]
    assert result.error is None
    kinds = [c["type"] for c in ui]
    assert kinds.count("reset-step") == 1
    assert_one_answer(shown_text(ui))
    assert_one_answer(await result.text())
    one, two = loopback.bodies()
    assert two["messages"] == one["messages"]  # redone: the same request, no prefill
    assert raw_messages(loopback.requests[1]) == raw_messages(loopback.requests[0])
    assert "continue_final_message" not in two
    assert [e.retried for e in ended] == [True, False]
    assert isinstance(ended[0].error, ModelUnavailableError)


async def test_an_old_client_gets_the_failure_never_a_glued_answer(
    loopback: LoopbackServer,
) -> None:
    llm = {**loopback.llm(), "model": "mistral/mistral-large-latest"}
    first = Reply(deltas=[{"content": w + " "} for w in WORDS[:40]], midstream_error="overloaded")
    again = Reply(deltas=[{"content": w + " "} for w in WORDS[:-1]] + [{"content": "word59."}])
    loopback.script(first, again)
    result = hs.stream_text(**llm, messages=USER, stream_retries=1)
    ui = [c async for c in result.to_ui_message_stream(client_version=6)]
    assert "reset-step" not in [c["type"] for c in ui]
    assert "error" in [c["type"] for c in ui]
    assert ui[-1] == {"type": "finish", "finishReason": "error"}
    assert shown_text(ui) == " ".join(WORDS[:40]) + " "  # what it showed, nothing glued


async def test_without_redo_a_family_without_prefill_fails_as_before(
    loopback: LoopbackServer,
) -> None:
    llm = {**loopback.llm(), "model": "mistral/mistral-large-latest"}
    first = Reply(deltas=[{"content": w + " "} for w in WORDS[:40]], midstream_error="overloaded")
    loopback.script(first)
    result = hs.stream_text(**llm, messages=USER, stream_retries=1, stream_redo=False)
    ui = [c async for c in result.to_ui_message_stream(client_version=6)]
    assert isinstance(result.error, ModelUnavailableError)
    assert len(loopback.requests) == 1
    assert "reset-step" not in [c["type"] for c in ui]


async def test_an_agent_turn_stores_one_answer_by_default(loopback: LoopbackServer) -> None:
    loopback.script(*cut_then_continue(lead_space=True))
    executor = hs.Executor(store=hs.MemoryStore())
    agent = hs.Agent(
        name="counter",
        model="anthropic/claude-sonnet-4-5",
        settings={"api_base": loopback.anthropic_base, "api_key": "sk-loopback"},
    )
    result = executor.run(agent, "s-retry", "Count to sixty, in words.")
    ui = [c async for c in result.to_ui_message_stream(client_version=7)]
    assert result.error is None
    assert_one_answer(shown_text(ui))
    stored = await executor.ui_messages("s-retry")
    parts = [p for p in stored[-1]["parts"] if p["type"] == "text"]
    assert [p["text"] for p in parts] == [ANSWER]
    assert len(loopback.requests) == 2


def test_a_bad_stream_retries_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="stream_retries"):
        hs.stream_text(model="helix/demo", messages=USER, stream_retries=-1)


def test_the_prefill_table() -> None:
    params: dict[str, Any] = {"model": "x", "messages": USER}
    assert prefill_request("gemini", params, USER, "Hello") is None
    assert prefill_request("mistral", params, USER, "Hello") is None
    assert prefill_request("openai", params, USER, "Hello") is None  # OpenAI's own API
    openai = {**params, "api_base": "https://api.openai.com/v1"}
    assert prefill_request("openai", openai, USER, "Hello") is None
    vllm = {**params, "api_base": "http://gpu-box:8000/v1"}
    assert prefill_request("openai", vllm, USER, "Hello") is not None
    thinking = {**params, "thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert prefill_request("anthropic", thinking, USER, "Hello") is None
    made = prefill_request("anthropic", params, USER, "Hello ")
    assert made is not None and made.cut == " "
    assert made.params["messages"][-1] == {"role": "assistant", "content": "Hello"}


async def test_the_failed_attempt_is_an_event_of_the_step_span(loopback: LoopbackServer) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from helix_stream.telemetry import TelemetrySettings

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    loopback.script(*cut_then_continue(lead_space=True))
    result = hs.stream_text(
        model="anthropic/claude-sonnet-4-5",
        api_base=loopback.anthropic_base,
        api_key="sk-loopback",
        messages=USER,
        stream_retries=1,
        telemetry=TelemetrySettings(tracer_provider=provider),
    )
    assert_one_answer(await result.text())
    (chat,) = [s for s in spans.get_finished_spans() if s.name.startswith("chat")]
    (event,) = [e for e in chat.events if e.name == "helix.attempt_failed"]
    attributes = dict(event.attributes or {})
    assert attributes["helix.attempt.after_text"] is True
    assert attributes["helix.attempt.will_retry"] is True
    assert attributes["helix.error.code"] == "model_unavailable"


async def test_a_chunk_stall_after_text_is_continued(loopback: LoopbackServer) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    agent = hs.Agent(
        name="storyteller",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        timeout=hs.Timeout(chunk=0.5),
    )
    stall = Reply(
        deltas=[{"content": w} for w in ("Once ", "upon ", "a ", "time")],
        stall_after=3,
        stall_for=2,
    )
    loopback.script(stall, Reply(deltas=[{"content": "time."}]))
    result = executor.run(agent, "s-stall", "Tell a story")
    assert await result.text() == "Once upon a time."
    stored = await executor.ui_messages("s-stall")
    assert [p["text"] for p in stored[-1]["parts"] if p["type"] == "text"] == ["Once upon a time."]
    assert "metadata" not in stored[-1] or not stored[-1]["metadata"].get("interrupted")
    second = loopback.bodies()[1]["messages"]
    assert second[-1] == {"role": "assistant", "content": "Once upon a "}


async def test_through_a_router_the_step_is_redone_on_its_group(loopback: LoopbackServer) -> None:
    from helix_stream.models._litellm import litellm_module

    # A model group's deployments (or fallbacks) may speak formats that answer a prefill
    # anew: the step is redone, even for a group named as an Anthropic model.
    router = litellm_module().Router(
        model_list=[
            {
                "model_name": "claude-sonnet-4-5",
                "litellm_params": {
                    "model": "anthropic/claude-sonnet-4-5",
                    "api_base": loopback.anthropic_base,
                    "api_key": "sk-loopback",
                },
            }
        ]
    )
    cut = Reply(deltas=[{"content": w + " "} for w in WORDS], fail_after=40)
    whole = Reply(deltas=[{"content": w + " "} for w in WORDS[:-1]] + [{"content": "word59."}])
    loopback.script(cut, whole)
    result = hs.stream_text(
        model="claude-sonnet-4-5", router=router, messages=USER, stream_retries=1
    )
    ui = [c async for c in result.to_ui_message_stream(client_version=7)]
    assert result.error is None
    assert [c["type"] for c in ui].count("reset-step") == 1
    assert_one_answer(shown_text(ui))
    one, two = loopback.bodies()
    assert texts(two["messages"]) == texts(one["messages"])
