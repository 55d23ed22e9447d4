"""to_ui_message_stream: internal chunks (and raw litellm streams) -> AI SDK UI chunk dicts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from types import SimpleNamespace
from typing import Any

import pytest

import helix_stream.transformers as transformers_api
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
    ToolOutputError,
)
from helix_stream.transformers import (
    UIStreamFinish,
    read_ui_message,
    to_ui_message_stream,
)


async def _source(chunks: Iterable[Any]) -> AsyncGenerator[Any, None]:
    for chunk in chunks:
        yield chunk


async def ui(chunks: Iterable[Any], **options: Any) -> list[dict[str, Any]]:
    return [c async for c in to_ui_message_stream(_source(chunks), **options)]


def _text_step(text: str, *, id: str = "t1", step: int = 0) -> list[Any]:
    return [
        StartStep(step_number=step),
        TextStart(id=id),
        TextDelta(id=id, delta=text),
        TextEnd(id=id),
        FinishStep(step_number=step, finish_reason="stop"),
    ]


def test_front_door_exports_match_all() -> None:
    assert sorted(transformers_api.__all__) == sorted(
        [
            "UI_MESSAGE_STREAM_HEADERS",
            "UIMessageFold",
            "UIMessageStreamResponse",
            "UIStreamFinish",
            "encode_sse",
            "read_ui_message",
            "to_ui_message_stream",
        ]
    )
    for name in transformers_api.__all__:
        assert getattr(transformers_api, name) is not None


async def test_text_stream() -> None:
    chunks = [
        Start(message_id="m1"),
        StartStep(step_number=0),
        TextStart(id="t1"),
        TextDelta(id="t1", delta="Hello"),
        TextDelta(id="t1", delta=", world"),
        TextEnd(id="t1"),
        FinishStep(step_number=0, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ]
    assert await ui(chunks) == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": "Hello"},
        {"type": "text-delta", "id": "t1", "delta": ", world"},
        {"type": "text-end", "id": "t1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


_REASONING = [
    Start(),
    StartStep(step_number=0),
    ReasoningStart(id="r1"),
    ReasoningDelta(id="r1", delta="Thinking"),
    ReasoningEnd(id="r1"),
    TextStart(id="t1"),
    TextDelta(id="t1", delta="Answer"),
    TextEnd(id="t1"),
    FinishStep(step_number=0, finish_reason="stop"),
    Finish(finish_reason="stop"),
]


async def test_reasoning_is_sent_by_default() -> None:
    assert await ui(_REASONING) == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": "r1"},
        {"type": "reasoning-delta", "id": "r1", "delta": "Thinking"},
        {"type": "reasoning-end", "id": "r1"},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": "Answer"},
        {"type": "text-end", "id": "t1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_send_reasoning_false_drops_reasoning() -> None:
    assert await ui(_REASONING, send_reasoning=False) == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": "Answer"},
        {"type": "text-end", "id": "t1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_tool_round_trip() -> None:
    chunks = [
        Start(message_id="m1"),
        StartStep(step_number=0),
        ToolInputStart(tool_call_id="c1", tool_name="weather"),
        ToolInputDelta(tool_call_id="c1", delta='{"city":'),
        ToolInputDelta(tool_call_id="c1", delta='"Paris"}'),
        ToolInputAvailable(tool_call_id="c1", tool_name="weather", input={"city": "Paris"}),
        ToolOutputAvailable(tool_call_id="c1", output={"temp": 21}),
        FinishStep(step_number=0, finish_reason="tool-calls"),
        *_text_step("Sunny, 21°C.", step=1),
        Finish(finish_reason="stop"),
    ]
    out = await ui(chunks)
    assert out == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "weather"},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"city":'},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '"Paris"}'},
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "weather",
            "input": {"city": "Paris"},
        },
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"temp": 21}},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": "Sunny, 21°C."},
        {"type": "text-end", "id": "t1"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert read_ui_message(out) == {
        "id": "m1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-weather",
                "toolCallId": "c1",
                "state": "output-available",
                "input": {"city": "Paris"},
                "output": {"temp": 21},
            },
            {"type": "step-start"},
            {"type": "text", "text": "Sunny, 21°C.", "state": "done"},
        ],
    }


async def test_tool_error_text_is_chosen_by_on_error() -> None:
    from helix_stream.errors import ToolFailedError

    seen: list[BaseException] = []

    def on_error(exc: BaseException) -> str:
        seen.append(exc)
        return f"tool said: {exc}"

    chunks = [
        StartStep(step_number=0),
        ToolInputAvailable(tool_call_id="b", tool_name="clock", input={}),
        ToolOutputError(tool_call_id="b", error_text="clock is broken"),
        FinishStep(step_number=0, finish_reason="tool-calls"),
        Finish(finish_reason="tool-calls"),
    ]
    out = [c async for c in to_ui_message_stream(_source(chunks), on_error=on_error)]
    assert {
        "type": "tool-output-error",
        "toolCallId": "b",
        "errorText": "tool said: clock is broken",
    } in out
    assert isinstance(seen[0], ToolFailedError) and seen[0].code == "tool_failed"


async def test_parallel_tool_calls_and_errors() -> None:
    chunks = [
        StartStep(step_number=0),
        ToolInputAvailable(tool_call_id="a", tool_name="weather", input={"city": "Oslo"}),
        ToolInputAvailable(tool_call_id="b", tool_name="clock", input={}),
        ToolOutputError(tool_call_id="b", error_text="clock is broken"),
        ToolOutputAvailable(tool_call_id="a", output=None),
        FinishStep(step_number=0, finish_reason="tool-calls"),
        Finish(finish_reason="tool-calls"),
    ]
    out = await ui(chunks)
    assert out[3:7] == [
        {"type": "tool-input-available", "toolCallId": "b", "toolName": "clock", "input": {}},
        # A tool's error text is masked like any error unless on_error chooses it.
        {"type": "tool-output-error", "toolCallId": "b", "errorText": "An error occurred."},
        # output is never omitted, null included (the protocol's "send null, never omit")
        {"type": "tool-output-available", "toolCallId": "a", "output": None},
        {"type": "finish-step"},
    ]
    parts = read_ui_message(out)["parts"]
    assert [(p["type"], p.get("state")) for p in parts] == [
        ("step-start", None),
        ("tool-weather", "output-available"),
        ("tool-clock", "output-error"),
    ]


async def test_not_executed_tool_is_an_output_with_a_not_executed_marker() -> None:
    chunks = [
        StartStep(step_number=0),
        ToolInputAvailable(tool_call_id="c1", tool_name="web_search", input={"q": "x"}),
        ToolNotExecuted(tool_call_id="c1", tool_name="web_search", reason="tool_inactive"),
        FinishStep(step_number=0, finish_reason="tool-calls"),
        Finish(finish_reason="tool-calls"),
    ]
    out = await ui(chunks)
    assert out[3] == {
        "type": "tool-output-available",
        "toolCallId": "c1",
        "output": {
            "notExecuted": True,
            "reason": "tool_inactive",
            "message": 'The tool "web_search" is switched off in this conversation, '
            "so it was not run.",
        },
    }


async def test_not_executed_tool_without_announcement_is_announced_first() -> None:
    chunks = [
        StartStep(step_number=0),
        ToolNotExecuted(tool_call_id="c9", tool_name="nope", reason="tool_unavailable"),
        FinishStep(step_number=0, finish_reason="tool-calls"),
    ]
    out = await ui(chunks)
    assert out[2:4] == [
        {"type": "tool-input-available", "toolCallId": "c9", "toolName": "nope", "input": {}},
        {
            "type": "tool-output-available",
            "toolCallId": "c9",
            "output": {
                "notExecuted": True,
                "reason": "tool_unavailable",
                "message": 'There is no tool named "nope", so nothing was run.',
            },
        },
    ]


async def test_context_rows_and_context_skipped_are_dropped() -> None:
    chunks = [
        Start(message_id="m1"),
        ContextRowChunk(row={"role": "context", "content": "secret"}),
        StartStep(step_number=0),
        ContextSkipped(reason="timeout", source="hook"),
        TextStart(id="t"),
        ContextRowChunk(row={"role": "context", "content": "more"}),
        TextDelta(id="t", delta="ok"),
        TextEnd(id="t"),
        FinishStep(step_number=0, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ]
    out = await ui(chunks)
    assert out == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "ok"},
        {"type": "text-end", "id": "t"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    assert "secret" not in repr(out) and "context" not in repr(out)


async def test_unknown_objects_never_reach_the_wire() -> None:
    out = await ui([StartStep(step_number=0), {"type": "context-row"}, object()])
    assert out == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "other"},
    ]


_FAILING = [
    Start(message_id="m1"),
    StartStep(step_number=0),
    TextStart(id="t"),
    TextDelta(id="t", delta="partial"),
    ErrorChunk(error=RuntimeError("db password is hunter2")),
]

# The open part ends before `error` (the client stops reading at `error`: a part left open
# would stay "streaming" for good), then the step and the message end.
_FAILED_TAIL = [
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "error"},
]


async def test_error_chunk_is_masked_and_closes_the_message() -> None:
    out = await ui(_FAILING)
    assert out == [
        {"type": "start", "messageId": "m1"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "partial"},
        {"type": "text-end", "id": "t"},
        {"type": "error", "errorText": "An error occurred."},
        *_FAILED_TAIL,
    ]
    assert "hunter2" not in repr(out)


async def test_on_error_chooses_the_error_text() -> None:
    seen: list[BaseException] = []

    def on_error(exc: BaseException) -> str:
        seen.append(exc)
        return f"failed: {type(exc).__name__}"

    out = await ui(_FAILING, on_error=on_error)
    assert out[4:] == [
        {"type": "text-end", "id": "t"},
        {"type": "error", "errorText": "failed: RuntimeError"},
        *_FAILED_TAIL,
    ]
    assert [str(e) for e in seen] == ["db password is hunter2"]


async def test_on_error_that_raises_falls_back_to_the_mask() -> None:
    def on_error(exc: BaseException) -> str:
        raise ValueError("oops")

    out = await ui(_FAILING, on_error=on_error)
    assert out[4:] == [
        {"type": "text-end", "id": "t"},
        {"type": "error", "errorText": "An error occurred."},
        *_FAILED_TAIL,
    ]


async def test_source_raising_mid_stream_becomes_one_error() -> None:
    async def source() -> AsyncIterator[Any]:
        yield StartStep(step_number=0)
        yield ReasoningStart(id="r")
        yield ReasoningDelta(id="r", delta="hmm")
        raise ConnectionError("upstream reset\nTraceback (most recent call last)")

    out = [c async for c in to_ui_message_stream(source())]
    assert out == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": "r"},
        {"type": "reasoning-delta", "id": "r", "delta": "hmm"},
        {"type": "reasoning-end", "id": "r"},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]


async def test_source_raising_before_any_chunk_still_starts_and_finishes() -> None:
    async def source() -> AsyncIterator[Any]:
        raise RuntimeError("no model")
        yield  # pragma: no cover

    assert [c async for c in to_ui_message_stream(source())] == [
        {"type": "start"},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish", "finishReason": "error"},
    ]


async def test_cancelled_error_from_the_source_is_not_an_error() -> None:
    async def source() -> AsyncIterator[Any]:
        yield StartStep(step_number=0)
        raise asyncio.CancelledError

    stream = to_ui_message_stream(source())
    assert await anext(stream) == {"type": "start"}
    assert await anext(stream) == {"type": "start-step"}
    with pytest.raises(asyncio.CancelledError):
        await anext(stream)


_APPROVAL = [
    StartStep(step_number=0),
    ToolInputAvailable(tool_call_id="c1", tool_name="delete", input={"path": "/"}),
    ToolApprovalRequest(approval_id="ap1", tool_call_id="c1"),
    ToolInputAvailable(tool_call_id="c2", tool_name="delete", input={"path": "/tmp"}),
    ToolOutputDenied(tool_call_id="c2", reason="not allowed"),
    FinishStep(step_number=0, finish_reason="tool-calls"),
]


async def test_v5_drops_approval_requests_and_sends_denials_as_tool_errors() -> None:
    out = await ui(_APPROVAL)  # client_version=5 is the default
    assert out[2:5] == [
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "delete",
            "input": {"path": "/"},
        },
        {
            "type": "tool-input-available",
            "toolCallId": "c2",
            "toolName": "delete",
            "input": {"path": "/tmp"},
        },
        {
            "type": "tool-output-error",
            "toolCallId": "c2",
            "errorText": "The tool call was denied. Reason: not allowed",
        },
    ]
    assert not {c["type"] for c in out} & {"tool-approval-request", "tool-output-denied"}


@pytest.mark.parametrize("version", [6, 7], ids=["ai@6", "ai@7"])
async def test_v6_and_v7_send_approval_requests_and_denials(version: int) -> None:
    out = await ui(_APPROVAL, client_version=version)
    assert out[2:6] == [
        {
            "type": "tool-input-available",
            "toolCallId": "c1",
            "toolName": "delete",
            "input": {"path": "/"},
        },
        {"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c1"},
        {
            "type": "tool-input-available",
            "toolCallId": "c2",
            "toolName": "delete",
            "input": {"path": "/tmp"},
        },
        {"type": "tool-output-denied", "toolCallId": "c2"},
    ]
    parts = read_ui_message(out)["parts"]
    assert parts[1]["state"] == "approval-requested"
    assert parts[1]["approval"] == {"id": "ap1"}
    assert parts[2]["state"] == "output-denied"


@pytest.mark.parametrize("version", [4, 8, "5"], ids=["4", "8", "str"])
def test_client_version_other_than_5_6_7_is_refused_at_call_time(version: Any) -> None:
    with pytest.raises(ValueError, match="client_version must be 5, 6 or 7"):
        to_ui_message_stream(_source([]), client_version=version)


async def test_results_for_unannounced_tool_calls_are_dropped() -> None:
    out = await ui(
        [
            StartStep(step_number=0),
            ToolOutputAvailable(tool_call_id="ghost", output=1),
            ToolOutputError(tool_call_id="ghost", error_text="x"),
            ToolInputDelta(tool_call_id="ghost", delta="{"),
            ToolApprovalRequest(approval_id="a", tool_call_id="ghost"),
            FinishStep(step_number=0, finish_reason="stop"),
        ],
        client_version=6,
    )
    assert out == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_unclosed_text_and_reasoning_are_closed_before_finish_step() -> None:
    out = await ui(
        [
            StartStep(step_number=0),
            ReasoningStart(id="r"),
            TextStart(id="t"),
            TextDelta(id="t", delta="a"),
            FinishStep(step_number=0, finish_reason="stop"),
            Finish(finish_reason="stop"),
        ]
    )
    assert out[2:] == [
        {"type": "reasoning-start", "id": "r"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "a"},
        {"type": "reasoning-end", "id": "r"},
        {"type": "text-end", "id": "t"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_ids_reused_across_steps_are_remapped() -> None:
    out = await ui([*_text_step("one", id="0"), *_text_step("two", id="0", step=1)])
    texts = [c for c in out if c["type"].startswith("text-")]
    assert texts == [
        {"type": "text-start", "id": "0"},
        {"type": "text-delta", "id": "0", "delta": "one"},
        {"type": "text-end", "id": "0"},
        {"type": "text-start", "id": "0-1"},
        {"type": "text-delta", "id": "0-1", "delta": "two"},
        {"type": "text-end", "id": "0-1"},
    ]


async def test_a_delta_without_start_gets_its_start_and_a_new_step_closes_the_last() -> None:
    out = await ui(
        [
            StartStep(step_number=0),
            TextDelta(id="t", delta="a"),
            TextEnd(id="never-opened"),
            StartStep(step_number=1),
            Finish(finish_reason="stop"),
        ]
    )
    assert out == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "a"},
        {"type": "text-end", "id": "t"},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_a_source_without_finish_gets_one_with_the_last_step_reason() -> None:
    out = await ui([*_text_step("x")[:-1], FinishStep(step_number=0, finish_reason="length")])
    assert out[-2:] == [{"type": "finish-step"}, {"type": "finish", "finishReason": "length"}]
    assert await ui([]) == [{"type": "start"}, {"type": "finish", "finishReason": "other"}]


async def test_message_metadata_is_added_to_start_and_finish() -> None:
    seen: list[Any] = []

    def metadata(chunk: Start | Finish) -> dict[str, Any] | None:
        seen.append(chunk)
        if isinstance(chunk, Finish):
            return {"finishedWith": chunk.finish_reason}
        return {"model": "demo"}

    out = await ui(
        [Start(message_id="m"), *_text_step("x"), Finish(finish_reason="stop")],
        message_metadata=metadata,
    )
    assert out[0] == {"type": "start", "messageId": "m", "messageMetadata": {"model": "demo"}}
    assert out[-1] == {
        "type": "finish",
        "finishReason": "stop",
        "messageMetadata": {"finishedWith": "stop"},
    }
    assert [type(c) for c in seen] == [Start, Finish]
    assert read_ui_message(out)["metadata"] == {"model": "demo", "finishedWith": "stop"}


async def test_generate_message_id_names_a_new_message() -> None:
    out = await ui(
        [Start(message_id="loop-id"), Finish(finish_reason="stop")],
        generate_message_id=lambda: "generated-1",
    )
    assert out[0] == {"type": "start", "messageId": "generated-1"}


async def test_send_start_and_send_finish_false_drop_them() -> None:
    out = await ui(
        [*_text_step("x"), Finish(finish_reason="stop")], send_start=False, send_finish=False
    )
    assert [c["type"] for c in out] == [
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
    ]


_ORIGINAL: list[dict[str, Any]] = [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Delete /tmp?"}]},
    {
        "id": "a1",
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {
                "type": "tool-delete",
                "toolCallId": "c1",
                "state": "approval-responded",
                "input": {"path": "/tmp"},
                "approval": {"id": "ap1", "approved": True},
            },
        ],
    },
]


async def test_continuation_of_the_last_assistant_message() -> None:
    results: list[UIStreamFinish] = []
    out = await ui(
        [
            Start(message_id="new-id"),
            StartStep(step_number=0),
            # The call was announced in the original message, so its result may follow.
            ToolOutputAvailable(tool_call_id="c1", output="deleted"),
            FinishStep(step_number=0, finish_reason="stop"),
            Finish(finish_reason="stop"),
        ],
        client_version=6,
        original_messages=_ORIGINAL,
        generate_message_id=lambda: "not-used",
        on_finish=results.append,
    )
    assert out[:3] == [
        {"type": "start", "messageId": "a1"},
        {"type": "start-step"},
        {"type": "tool-output-available", "toolCallId": "c1", "output": "deleted"},
    ]
    [result] = results
    assert result.is_continuation is True
    assert result.message["id"] == "a1"
    assert result.message["parts"][1]["state"] == "output-available"
    assert result.message["parts"][1]["output"] == "deleted"
    assert [m["id"] for m in result.messages] == ["u1", "a1"]
    assert _ORIGINAL[1]["parts"][1]["state"] == "approval-responded"  # not mutated


async def test_on_finish_after_a_normal_stream() -> None:
    results: list[UIStreamFinish] = []

    async def on_finish(result: UIStreamFinish) -> None:
        await asyncio.sleep(0)
        results.append(result)

    await ui(
        [Start(message_id="m1"), *_text_step("hi"), Finish(finish_reason="stop")],
        original_messages=[_ORIGINAL[0]],
        on_finish=on_finish,
    )
    assert results == [
        UIStreamFinish(
            message={
                "id": "m1",
                "role": "assistant",
                "parts": [{"type": "step-start"}, {"type": "text", "text": "hi", "state": "done"}],
            },
            messages=[
                _ORIGINAL[0],
                {
                    "id": "m1",
                    "role": "assistant",
                    "parts": [
                        {"type": "step-start"},
                        {"type": "text", "text": "hi", "state": "done"},
                    ],
                },
            ],
            is_continuation=False,
            is_aborted=False,
            finish_reason="stop",
        )
    ]


async def test_on_finish_after_an_error() -> None:
    results: list[UIStreamFinish] = []
    await ui(_FAILING, on_finish=results.append)
    [result] = results
    assert (result.is_aborted, result.finish_reason) == (False, "error")
    assert result.message["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "partial", "state": "done"},
    ]


async def test_on_finish_when_the_consumer_stops_early_and_the_source_is_closed() -> None:
    results: list[UIStreamFinish] = []
    events: list[str] = []

    async def source() -> AsyncIterator[Any]:
        try:
            yield Start(message_id="m1")
            yield StartStep(step_number=0)
            yield TextStart(id="t")
            for n in range(1000):
                yield TextDelta(id="t", delta=str(n))
        except GeneratorExit:
            events.append("closed")
            raise
        finally:
            events.append("finally")

    stream = to_ui_message_stream(source(), on_finish=results.append)
    received = [await anext(stream) for _ in range(5)]
    assert received[-1] == {"type": "text-delta", "id": "t", "delta": "1"}
    await stream.aclose()
    assert events == ["closed", "finally"]
    [result] = results
    assert (result.is_aborted, result.finish_reason) == (True, None)
    assert result.message["parts"][1] == {"type": "text", "text": "01", "state": "streaming"}


async def test_cancelling_the_consumer_task_cancels_the_source() -> None:
    events: list[str] = []
    started = asyncio.Event()

    async def source() -> AsyncIterator[Any]:
        try:
            yield StartStep(step_number=0)
            started.set()
            await asyncio.sleep(3600)  # a slow model
            yield Finish(finish_reason="stop")
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        finally:
            events.append("finally")

    results: list[UIStreamFinish] = []

    async def consume() -> None:
        async for _ in to_ui_message_stream(source(), on_finish=results.append):
            pass

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert events == ["cancelled", "finally"]
    assert results[0].is_aborted is True


async def test_after_finish_the_source_is_drained_not_closed() -> None:
    events: list[str] = []

    async def source() -> AsyncIterator[Any]:
        yield Finish(finish_reason="stop")
        yield TextDelta(id="late", delta="ignored")
        await asyncio.sleep(0)
        events.append("committed")  # work a loop does after its last chunk

    out = [c async for c in to_ui_message_stream(source())]
    assert out == [{"type": "start"}, {"type": "finish", "finishReason": "stop"}]
    assert events == ["committed"]


async def test_data_chunks() -> None:
    out = await ui(
        [
            StartStep(step_number=0),
            DataChunk(name="weather", data={"status": "loading"}, id="w1"),
            DataChunk(name="notice", data="working…", transient=True),
            DataChunk(name="weather", data={"status": "done", "temp": 3}, id="w1"),
            DataChunk(name="log", data=[1, 2]),
            FinishStep(step_number=0, finish_reason="stop"),
        ]
    )
    assert out[2:6] == [
        {"type": "data-weather", "data": {"status": "loading"}, "id": "w1"},
        {"type": "data-notice", "data": "working…", "transient": True},
        {"type": "data-weather", "data": {"status": "done", "temp": 3}, "id": "w1"},
        {"type": "data-log", "data": [1, 2]},
    ]
    assert read_ui_message(out)["parts"] == [
        {"type": "step-start"},
        {"type": "data-weather", "data": {"status": "done", "temp": 3}, "id": "w1"},
        {"type": "data-log", "data": [1, 2]},
    ]


def test_read_ui_message_folds_streaming_tool_input_and_errors() -> None:
    message = read_ui_message(
        [
            {"type": "start", "messageId": "m"},
            {"type": "start-step"},
            {"type": "tool-input-start", "toolCallId": "c", "toolName": "search"},
            {"type": "tool-input-delta", "toolCallId": "c", "inputTextDelta": '{"q": "pari'},
            {"type": "tool-input-start", "toolCallId": "d", "toolName": "calc", "dynamic": True},
            {
                "type": "tool-input-error",
                "toolCallId": "d",
                "toolName": "calc",
                "input": "{bad",
                "errorText": "invalid JSON",
            },
        ]
    )
    assert message["parts"][1:] == [
        {
            "type": "tool-search",
            "toolCallId": "c",
            "state": "input-streaming",
            "input": {"q": "pari"},
            "rawInput": '{"q": "pari',
        },
        {
            "type": "dynamic-tool",
            "toolCallId": "d",
            "toolName": "calc",
            "state": "output-error",
            "rawInput": "{bad",
            "errorText": "invalid JSON",
        },
    ]


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "text-delta", "id": "x", "delta": "a"},
        {"type": "reasoning-end", "id": "x"},
        {"type": "tool-output-available", "toolCallId": "x", "output": 1},
        {"type": "tool-input-delta", "toolCallId": "x", "inputTextDelta": "{"},
    ],
    ids=lambda c: c["type"],
)
def test_read_ui_message_rejects_what_the_client_rejects(chunk: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"missing|No tool invocation"):
        read_ui_message([chunk])


# -- raw litellm streams (litellm's real types; the package itself never imports litellm) --


def _litellm_chunk(
    *,
    content: str | None = None,
    reasoning: str | None = None,
    tool_calls: list[Any] | None = None,
    finish_reason: str | None = None,
    usage: Any = None,
) -> Any:
    from litellm.types.utils import Delta, ModelResponseStream, StreamingChoices

    delta = Delta(content=content, reasoning_content=reasoning, tool_calls=tool_calls)
    kwargs: dict[str, Any] = {}
    if usage is not None:
        kwargs["usage"] = usage
    return ModelResponseStream(
        choices=[StreamingChoices(delta=delta, finish_reason=finish_reason)],
        model="gpt-test",
        **kwargs,
    )


def _tool_fragment(
    index: int, arguments: str, id: str | None = None, name: str | None = None
) -> Any:
    from litellm.types.utils import ChatCompletionDeltaToolCall, Function

    return ChatCompletionDeltaToolCall(
        index=index,
        id=id,
        type="function" if id else None,
        function=Function(name=name, arguments=arguments),
    )


async def test_raw_litellm_stream_with_reasoning_text_and_parallel_tool_calls() -> None:
    from litellm.types.utils import Usage

    closed: list[bool] = []

    class Stream:
        """Shaped like litellm's CustomStreamWrapper: an async iterator with aclose()."""

        def __init__(self, items: list[Any]) -> None:
            self._items = iter(items)

        def __aiter__(self) -> Stream:
            return self

        async def __anext__(self) -> Any:
            try:
                return next(self._items)
            except StopIteration:
                raise StopAsyncIteration from None

        async def aclose(self) -> None:
            closed.append(True)

    items = [
        _litellm_chunk(reasoning="Let me "),
        _litellm_chunk(reasoning="check."),
        _litellm_chunk(content="Checking "),
        _litellm_chunk(content="both."),
        _litellm_chunk(tool_calls=[_tool_fragment(0, "", id="call_a", name="weather")]),
        _litellm_chunk(tool_calls=[_tool_fragment(0, '{"city": ')]),
        _litellm_chunk(tool_calls=[_tool_fragment(1, '{"tz": "UTC"}', id="call_b", name="clock")]),
        _litellm_chunk(tool_calls=[_tool_fragment(0, '"Oslo"}')]),
        _litellm_chunk(finish_reason="tool_calls"),
        _litellm_chunk(usage=Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)),
    ]
    out = [c async for c in to_ui_message_stream(Stream(items))]
    assert out == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "reasoning-start", "id": "reasoning-0"},
        {"type": "reasoning-delta", "id": "reasoning-0", "delta": "Let me "},
        {"type": "reasoning-delta", "id": "reasoning-0", "delta": "check."},
        {"type": "reasoning-end", "id": "reasoning-0"},
        {"type": "text-start", "id": "text-0"},
        {"type": "text-delta", "id": "text-0", "delta": "Checking "},
        {"type": "text-delta", "id": "text-0", "delta": "both."},
        {"type": "tool-input-start", "toolCallId": "call_a", "toolName": "weather"},
        {"type": "tool-input-delta", "toolCallId": "call_a", "inputTextDelta": '{"city": '},
        {"type": "tool-input-start", "toolCallId": "call_b", "toolName": "clock"},
        {"type": "tool-input-delta", "toolCallId": "call_b", "inputTextDelta": '{"tz": "UTC"}'},
        {"type": "tool-input-delta", "toolCallId": "call_a", "inputTextDelta": '"Oslo"}'},
        {"type": "text-end", "id": "text-0"},
        {
            "type": "tool-input-available",
            "toolCallId": "call_a",
            "toolName": "weather",
            "input": {"city": "Oslo"},
        },
        {
            "type": "tool-input-available",
            "toolCallId": "call_b",
            "toolName": "clock",
            "input": {"tz": "UTC"},
        },
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    assert closed == [True]


@pytest.mark.parametrize(
    ("litellm_reason", "ui_reason"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool-calls"),
        ("function_call", "tool-calls"),
        ("content_filter", "content-filter"),
        (None, "other"),
    ],
)
async def test_litellm_finish_reasons_are_mapped(
    litellm_reason: str | None, ui_reason: str
) -> None:
    out = await ui([_litellm_chunk(content="x"), _litellm_chunk(finish_reason=litellm_reason)])
    assert out[-1] == {"type": "finish", "finishReason": ui_reason}


async def test_stream_items_are_told_apart_by_attributes_not_by_litellm_classes() -> None:
    # litellm normalises provider reasons itself; an unknown one can still reach us.
    def item(content: str | None, finish_reason: str | None) -> Any:
        delta = SimpleNamespace(content=content, reasoning_content=None, tool_calls=None)
        return SimpleNamespace(choices=[SimpleNamespace(delta=delta, finish_reason=finish_reason)])

    out = await ui([item("x", None), item(None, "something_new")])
    assert out == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "text-start", "id": "text-0"},
        {"type": "text-delta", "id": "text-0", "delta": "x"},
        {"type": "text-end", "id": "text-0"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "other"},
    ]


# litellm's import-time pydantic noise (not ours): a ReadOnly TypedDict warning.
@pytest.mark.filterwarnings("ignore:Items? .*ReadOnly:UserWarning")
async def test_a_real_litellm_acompletion_stream() -> None:
    import litellm

    stream = await litellm.acompletion(
        model="openai/gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        mock_response="Hello from litellm",
    )
    out = [c async for c in to_ui_message_stream(stream)]
    assert [c["type"] for c in out[:3]] == ["start", "start-step", "text-start"]
    assert "".join(c["delta"] for c in out if c["type"] == "text-delta") == "Hello from litellm"
    assert out[-3:] == [
        {"type": "text-end", "id": "text-0"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


async def test_a_litellm_stream_that_raises_becomes_one_masked_error() -> None:
    async def stream() -> AsyncIterator[Any]:
        yield _litellm_chunk(content="par")
        raise TimeoutError("provider timed out at 10.0.0.3")

    out = [c async for c in to_ui_message_stream(stream())]
    assert out[-5:] == [
        {"type": "text-delta", "id": "text-0", "delta": "par"},
        {"type": "text-end", "id": "text-0"},
        {"type": "error", "errorText": "An error occurred."},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "error"},
    ]


async def test_closing_closes_an_iterable_source_whose_iterator_cannot_be_closed() -> None:
    closed: list[str] = []

    class Result:
        """Like the loop's StreamTextResult: aclose() on the iterable, a bare iterator."""

        def __init__(self) -> None:
            self._gen = _source([StartStep(step_number=0), TextDelta(id="t", delta="a")] * 50)

        def __aiter__(self) -> Any:
            gen = self._gen

            class Iterator:
                def __aiter__(self) -> Any:
                    return self

                def __anext__(self) -> Any:
                    return gen.__anext__()

            return Iterator()

        async def aclose(self) -> None:
            closed.append("result")
            await self._gen.aclose()

    stream = to_ui_message_stream(Result())
    assert [(await anext(stream))["type"] for _ in range(3)] == [
        "start",
        "start-step",
        "text-start",
    ]
    await stream.aclose()
    assert closed == ["result"]


async def test_an_abort_ends_the_open_parts_and_the_step_then_sends_abort() -> None:
    finished: list[UIStreamFinish] = []
    out = await ui(
        [
            Start(message_id="m1"),
            StartStep(step_number=0),
            ReasoningStart(id="r"),
            ReasoningDelta(id="r", delta="hmm"),
            TextStart(id="t"),
            TextDelta(id="t", delta="Once upon"),
            Abort(reason="stopped"),
            TextDelta(id="t", delta=" never sent"),
        ],
        on_finish=finished.append,
    )
    assert out[-5:] == [
        {"type": "reasoning-end", "id": "r"},
        {"type": "text-end", "id": "t"},
        {"type": "finish-step"},
        # Marked as the session stores a cut answer: a reload shows the same.
        {"type": "message-metadata", "messageMetadata": {"interrupted": True}},
        {"type": "abort", "reason": "stopped"},
    ]
    assert "finish" not in [c["type"] for c in out]
    assert finished[0].is_aborted is True and finished[0].finish_reason is None
    assert finished[0].message["metadata"] == {"interrupted": True}
    assert finished[0].message["parts"][-1] == {
        "type": "text",
        "text": "Once upon",
        "state": "done",
    }


async def test_an_abort_before_anything_still_starts_the_message() -> None:
    assert await ui([Abort()]) == [
        {"type": "start"},
        {"type": "message-metadata", "messageMetadata": {"interrupted": True}},
        {"type": "abort"},
    ]
