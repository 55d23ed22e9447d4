"""The UI message stream against the real AI SDK client: ai@5, ai@6 and ai@7.

A uvicorn server on 127.0.0.1 serves ``UIMessageStreamResponse(to_ui_message_stream(<scripted
internal chunks>, client_version=N))``; ``client.mjs`` posts to it through the ``ai`` package's
``DefaultChatTransport`` (which validates every chunk with ``uiMessageChunkSchema``) and folds
the chunks with ``readUIMessageStream``. Each test checks that no chunk was rejected, that the
client received exactly the chunks the transformer made, and the final ``UIMessage`` — which
must also equal what :func:`helix_stream.transformers.read_ui_message` folds from them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from helix_stream.chunks import (
    Abort,
    ContextRowChunk,
    ContextSkipped,
    DataChunk,
    ErrorChunk,
    Finish,
    FinishStep,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResetStep,
    Start,
    StartStep,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
)
from helix_stream.transformers import (
    UIMessageStreamResponse,
    read_ui_message,
    to_ui_message_stream,
)

from ._client import AI_VERSIONS, ensure_ai, missing_node_reason, run_client, serve_app


def _text(id: str, *deltas: str) -> list[Any]:
    return [TextStart(id=id), *(TextDelta(id=id, delta=d) for d in deltas), TextEnd(id=id)]


def _litellm_items() -> list[Any]:
    from litellm.types.utils import (
        ChatCompletionDeltaToolCall,
        Delta,
        Function,
        ModelResponseStream,
        StreamingChoices,
    )

    def item(finish_reason: str | None = None, **delta: Any) -> Any:
        return ModelResponseStream(
            choices=[StreamingChoices(delta=Delta(**delta), finish_reason=finish_reason)]
        )

    def call(arguments: str, **first: Any) -> list[Any]:
        name = first.pop("name", None)
        fn = Function(name=name, arguments=arguments)
        return [ChatCompletionDeltaToolCall(index=0, function=fn, **first)]

    return [
        item(reasoning_content="The user wants weather."),
        item(content="Let me look."),
        item(tool_calls=call("", id="call_1", type="function", name="weather")),
        item(tool_calls=call('{"city": "Oslo"}')),
        item(finish_reason="tool_calls"),
    ]


SCENARIOS: dict[str, Callable[[], list[Any]]] = {
    "text": lambda: [
        Start(message_id="msg-text"),
        StartStep(step_number=0),
        *_text("t0", "Hello", ", world!"),
        FinishStep(step_number=0, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ],
    "tool_round_trip": lambda: [
        Start(message_id="msg-tool"),
        StartStep(step_number=0),
        ToolInputStart(tool_call_id="call_1", tool_name="weather"),
        ToolInputDelta(tool_call_id="call_1", delta='{"city":'),
        ToolInputDelta(tool_call_id="call_1", delta=' "Paris"}'),
        ToolInputAvailable(tool_call_id="call_1", tool_name="weather", input={"city": "Paris"}),
        ToolOutputAvailable(tool_call_id="call_1", output={"tempC": 21, "sky": "clear"}),
        FinishStep(step_number=0, finish_reason="tool-calls"),
        StartStep(step_number=1),
        *_text("t0", "It is 21°C and clear in Paris."),  # the same id again: remapped
        FinishStep(step_number=1, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ],
    "error": lambda: [
        Start(message_id="msg-error"),
        StartStep(step_number=0),
        TextStart(id="t0"),
        TextDelta(id="t0", delta="partial"),
        ErrorChunk(error=RuntimeError("connection to 10.0.0.7 refused; token=abc")),
    ],
    "stopped": lambda: [
        Start(message_id="msg-stopped"),
        StartStep(step_number=0),
        TextStart(id="t0"),
        TextDelta(id="t0", delta="Once upon"),
        Abort(reason="stopped"),
    ],
    "not_executed": lambda: [
        StartStep(step_number=0),
        ToolInputAvailable(tool_call_id="call_1", tool_name="web_search", input={"q": "x"}),
        ToolNotExecuted(tool_call_id="call_1", tool_name="web_search", reason="tool_inactive"),
        # never announced by the loop: the transformer announces it
        ToolNotExecuted(tool_call_id="call_2", tool_name="teleport", reason="tool_unavailable"),
        FinishStep(step_number=0, finish_reason="tool-calls"),
        Finish(finish_reason="tool-calls"),
    ],
    "context": lambda: [
        Start(message_id="msg-context"),
        ContextRowChunk(row={"role": "context", "content": "SECRET-ROW"}),
        StartStep(step_number=0),
        ContextSkipped(reason="timeout", source="hook"),
        *_text("t0", "Answer"),
        ContextRowChunk(row={"role": "context", "content": "SECRET-ROW-2"}),
        FinishStep(step_number=0, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ],
    "approval": lambda: [
        StartStep(step_number=0),
        ToolInputAvailable(tool_call_id="call_1", tool_name="delete_file", input={"path": "/a"}),
        ToolApprovalRequest(approval_id="approval_1", tool_call_id="call_1"),
        ToolInputAvailable(tool_call_id="call_2", tool_name="delete_file", input={"path": "/b"}),
        ToolOutputDenied(tool_call_id="call_2", reason="user said no"),
        FinishStep(step_number=0, finish_reason="tool-calls"),
        Finish(finish_reason="tool-calls"),
    ],
    "everything_else": lambda: [
        Start(message_id="msg-misc"),
        StartStep(step_number=0),
        ReasoningStart(id="r0"),
        ReasoningDelta(id="r0", delta="Thinking…"),
        DataChunk(name="status", data={"step": 1}, id="s1"),
        DataChunk(name="toast", data="transient!", transient=True),
        TextDelta(id="t0", delta="no text-start before me"),
        DataChunk(name="status", data={"step": 2}, id="s1"),
        FinishStep(step_number=0, finish_reason="stop"),  # closes r0 and t0 first
        StartStep(step_number=1),
        ReasoningStart(id="r0"),  # reused id: remapped
        ReasoningDelta(id="r0", delta="Again"),
        ReasoningEnd(id="r0"),
        *_text("t0", "Done"),
        Finish(finish_reason="length"),
    ],
    "continuation": lambda: [
        StartStep(step_number=0),
        ToolOutputAvailable(tool_call_id="call_9", output={"ok": True}),  # announced earlier
        *_text("t0", "Finished the earlier call."),
        FinishStep(step_number=0, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ],
    "litellm": _litellm_items,
    # stream_retries redoing a step: the failed attempt's open text, reset-step, the answer.
    "reset_step": lambda: [
        Start(message_id="msg-reset"),
        StartStep(step_number=0),
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="Hello, wor"),
        ResetStep(step_number=0),
        *_text("text-0", "Hello, ", "world!"),
        FinishStep(step_number=0, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ],
}

_CONTINUED = {
    "id": "msg-earlier",
    "role": "assistant",
    "parts": [
        {"type": "step-start"},
        {
            "type": "tool-lookup",
            "toolCallId": "call_9",
            "state": "input-available",
            "input": {"id": 9},
        },
    ],
}
_USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}


def _ui_stream(scenario: str, version: int, messages: list[Any]) -> AsyncIterator[dict[str, Any]]:
    async def source() -> AsyncIterator[Any]:
        for chunk in SCENARIOS[scenario]():
            yield chunk

    return to_ui_message_stream(source(), client_version=version, original_messages=messages)


# Raw UI chunks the transformer must never send, served as they are to show that the harness
# does catch what the client rejects: {case: (chunks, the client majors that reject them)}.
_TOOL = {"type": "tool-input-available", "toolCallId": "c1", "toolName": "x", "input": {}}
_INVALID: dict[str, tuple[list[dict[str, Any]], set[int]]] = {
    "context-row": ([{"type": "start"}, {"type": "context-row", "row": {}}], {5, 6, 7}),
    "output-omitted": ([_TOOL, {"type": "tool-output-available", "toolCallId": "c1"}], {5, 6, 7}),
    "approval-on-v5": (
        [_TOOL, {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c1"}],
        {5},
    ),
    "finish-unknown": ([{"type": "start"}, {"type": "finish", "finishReason": "unknown"}], {6, 7}),
}


def _app() -> Starlette:
    async def chat(request: Request) -> Response:
        body = await request.json()
        stream = _ui_stream(body["scenario"], body["clientVersion"], body["messages"])
        return UIMessageStreamResponse(stream)

    async def raw(request: Request) -> Response:
        chunks = _INVALID[(await request.json())["case"]][0]

        async def stream() -> AsyncIterator[dict[str, Any]]:
            for chunk in chunks:
                yield chunk

        return UIMessageStreamResponse(stream())

    return Starlette(
        routes=[
            Route("/api/chat", chat, methods=["POST"]),
            Route("/api/raw", raw, methods=["POST"]),
        ]
    )


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve_app(_app()) as url:
        yield url


@pytest.fixture(scope="module", params=AI_VERSIONS, ids=[f"ai@{v}" for v in AI_VERSIONS])
def version(request: pytest.FixtureRequest) -> int:
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    ensure_ai(request.param)  # an npm failure raises: the test fails, it is not skipped
    return int(request.param)


def _chat(base_url: str, scenario: str, version: int, messages: list[Any] | None = None) -> Any:
    messages = [_USER] if messages is None else messages
    body = {"id": "chat-1", "messages": messages, "scenario": scenario, "clientVersion": version}
    result = run_client(f"{base_url}/api/chat", body, version)
    assert int(result["aiVersion"].split(".")[0]) == version

    async def expected() -> list[dict[str, Any]]:
        return [c async for c in _ui_stream(scenario, version, messages)]

    # The client got exactly what the transformer made, and folds it as read_ui_message does.
    assert result["chunks"] == asyncio.run(expected())
    continued = messages[-1] if messages and messages[-1]["role"] == "assistant" else None
    assert result["finalMessage"] == read_ui_message(result["chunks"], message=continued)
    return result


def test_text(base_url: str, version: int) -> None:
    result = _chat(base_url, "text", version)
    assert result["error"] is None
    assert result["finalMessage"] == {
        "id": "msg-text",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Hello, world!", "state": "done"},
        ],
    }


def test_tool_round_trip(base_url: str, version: int) -> None:
    result = _chat(base_url, "tool_round_trip", version)
    assert result["error"] is None
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {
            "type": "tool-weather",
            "toolCallId": "call_1",
            "state": "output-available",
            "input": {"city": "Paris"},
            "output": {"tempC": 21, "sky": "clear"},
        },
        {"type": "step-start"},
        {"type": "text", "text": "It is 21°C and clear in Paris.", "state": "done"},
    ]


def test_error_is_masked_and_the_message_is_closed(base_url: str, version: int) -> None:
    result = _chat(base_url, "error", version)
    # An error chunk is what puts useChat into status "error"; nothing else was rejected.
    assert result["errors"] == [{"name": "Error", "message": "An error occurred."}]
    # The open text part ends before `error`: useChat stops reading at `error`, and a part
    # left without its end would stay "streaming" (a cursor blinking for good).
    assert [c["type"] for c in result["chunks"]][-4:] == [
        "text-end",
        "error",
        "finish-step",
        "finish",
    ]
    assert result["chunks"][-1] == {"type": "finish", "finishReason": "error"}
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "partial", "state": "done"},
    ]
    assert "10.0.0.7" not in str(result)


def test_a_stopped_answer_ends_its_part_then_aborts(base_url: str, version: int) -> None:
    result = _chat(base_url, "stopped", version)
    assert result["error"] is None  # `abort` (with its reason) is valid on every major
    assert [c["type"] for c in result["chunks"]][-4:] == [
        "text-end",
        "finish-step",
        "message-metadata",
        "abort",
    ]
    assert result["chunks"][-1] == {"type": "abort", "reason": "stopped"}
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Once upon", "state": "done"},
    ]
    # What GET .../messages gives back for a stopped answer: the same mark.
    assert result["finalMessage"]["metadata"] == {"interrupted": True}


def test_not_executed_tools(base_url: str, version: int) -> None:
    result = _chat(base_url, "not_executed", version)
    assert result["error"] is None
    assert result["finalMessage"]["parts"][1:] == [
        {
            "type": "tool-web_search",
            "toolCallId": "call_1",
            "state": "output-available",
            "input": {"q": "x"},
            "output": {
                "notExecuted": True,
                "reason": "tool_inactive",
                "message": 'The tool "web_search" is switched off in this conversation, '
                "so it was not run.",
            },
        },
        {
            "type": "tool-teleport",
            "toolCallId": "call_2",
            "state": "output-available",
            "input": {},
            "output": {
                "notExecuted": True,
                "reason": "tool_unavailable",
                "message": 'There is no tool named "teleport", so nothing was run.',
            },
        },
    ]


def test_context_rows_and_context_skipped_never_reach_the_client(
    base_url: str, version: int
) -> None:
    result = _chat(base_url, "context", version)
    assert result["error"] is None
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Answer", "state": "done"},
    ]
    body = {"messages": [_USER], "scenario": "context", "clientVersion": version}
    raw = httpx.post(f"{base_url}/api/chat", json=body, timeout=10).content
    assert raw.endswith(b"data: [DONE]\n\n")
    for forbidden in (b"context-row", b"context_skipped", b"SECRET-ROW"):
        assert forbidden not in raw


def test_approval_requests_and_denials(base_url: str, version: int) -> None:
    result = _chat(base_url, "approval", version)
    assert result["error"] is None
    states = [(p["toolCallId"], p["state"]) for p in result["finalMessage"]["parts"][1:]]
    if version == 5:  # no approval states in ai@5: request dropped, denial as a tool error
        assert states == [("call_1", "input-available"), ("call_2", "output-error")]
        assert result["finalMessage"]["parts"][2]["errorText"] == (
            "The tool call was denied. Reason: user said no"
        )
    else:
        assert states == [("call_1", "approval-requested"), ("call_2", "output-denied")]
        assert result["finalMessage"]["parts"][1]["approval"] == {"id": "approval_1"}


def test_reasoning_data_parts_and_repairs(base_url: str, version: int) -> None:
    result = _chat(base_url, "everything_else", version)
    assert result["error"] is None
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "reasoning", "id": "r0", "text": "Thinking…", "state": "done"},
        {"type": "data-status", "id": "s1", "data": {"step": 2}},
        {"type": "text", "text": "no text-start before me", "state": "done"},
        {"type": "step-start"},
        {"type": "reasoning", "id": "r0-1", "text": "Again", "state": "done"},
        {"type": "text", "text": "Done", "state": "done"},
    ]


def test_continuation_of_the_last_assistant_message(base_url: str, version: int) -> None:
    result = _chat(base_url, "continuation", version, messages=[_USER, _CONTINUED])
    assert result["error"] is None
    assert result["chunks"][0] == {"type": "start", "messageId": "msg-earlier"}
    message = result["finalMessage"]
    assert message["id"] == "msg-earlier"
    assert message["parts"][1]["state"] == "output-available"
    assert message["parts"][1]["output"] == {"ok": True}
    assert message["parts"][-1] == {
        "type": "text",
        "text": "Finished the earlier call.",
        "state": "done",
    }


def test_a_raw_litellm_stream(base_url: str, version: int) -> None:
    result = _chat(base_url, "litellm", version)
    assert result["error"] is None
    assert result["chunks"][-1] == {"type": "finish", "finishReason": "tool-calls"}
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "reasoning", "id": "reasoning-0", "text": "The user wants weather.",
         "state": "done"},
        {"type": "text", "text": "Let me look.", "state": "done"},
        {"type": "tool-weather", "toolCallId": "call_1", "state": "input-available",
         "input": {"city": "Oslo"}},
    ]  # fmt: skip


@pytest.mark.parametrize("case", list(_INVALID))
def test_the_harness_sees_what_the_client_rejects(base_url: str, version: int, case: str) -> None:
    result = run_client(f"{base_url}/api/raw", {"messages": [], "case": case}, version)
    if version in _INVALID[case][1]:
        assert result["error"] is not None
        assert result["error"]["name"] == "AI_TypeValidationError"
    else:
        assert result["error"] is None


def test_reset_step_drops_the_failed_attempt_on_ai7_and_fails_before(
    base_url: str, version: int
) -> None:
    result = _chat(base_url, "reset_step", version)
    if version >= 7:
        assert result["error"] is None  # the real client accepts reset-step
        assert "reset-step" in [c["type"] for c in result["chunks"]]
        assert result["finalMessage"]["parts"] == [
            {"type": "step-start"},
            {"type": "text", "text": "Hello, world!", "state": "done"},
        ]
    else:
        # An older client cannot drop parts: the failure, as before, never a glued answer.
        assert result["errors"] == [{"name": "Error", "message": "An error occurred."}]
        assert "reset-step" not in [c["type"] for c in result["chunks"]]
        assert result["finalMessage"]["parts"] == [
            {"type": "step-start"},
            {"type": "text", "text": "Hello, wor", "state": "done"},
        ]
