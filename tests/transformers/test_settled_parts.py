"""A call of an earlier message settled in a later turn: ``ToolSettled`` becomes one transient
``data-tool-settled`` part whose patch turns that message's tool part into what folding the
result into it gives; ``ToolCancelled`` is a tool error whose text is never masked."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from typing import Any

import pytest

from helix_stream.chunks import (
    FinishStep,
    Start,
    StartStep,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolCancelled,
    ToolInputAvailable,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    ToolResultChunk,
    ToolSettled,
)
from helix_stream.transformers import read_ui_message, to_ui_message_stream

CALL = "call_1"


async def _source(chunks: Iterable[Any]) -> AsyncGenerator[Any, None]:
    for chunk in chunks:
        yield chunk


async def ui(chunks: Iterable[Any], **options: Any) -> list[dict[str, Any]]:
    return [c async for c in to_ui_message_stream(_source(chunks), **options)]


def _asked(version: int) -> list[Any]:
    """The earlier turn: a deploy call that waits (for an approval from ai@6 on)."""
    waits = [ToolApprovalRequest(approval_id=f"approval-{CALL}", tool_call_id=CALL)]
    return [
        Start(message_id="m1"),
        StartStep(step_number=0),
        ToolInputAvailable(tool_call_id=CALL, tool_name="deploy", input={"target": "prod"}),
        *(waits if version >= 6 else []),
        FinishStep(step_number=0, finish_reason="tool-calls"),
    ]


def _apply(message: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """What the README's ``onData`` recipe does to the earlier message."""
    message_id, call_id = data["messageId"], data["toolCallId"]
    update = {k: v for k, v in data.items() if k not in ("messageId", "toolCallId")}
    assert message["id"] == message_id
    parts = [{**p, **update} if p.get("toolCallId") == call_id else p for p in message["parts"]]
    return {**message, "parts": parts}


RESULTS: list[ToolResultChunk] = [
    ToolCancelled(tool_call_id=CALL),
    ToolOutputAvailable(tool_call_id=CALL, output={"deployed": "prod"}),
    ToolOutputError(tool_call_id=CALL, error_text="secret stack trace"),
    ToolOutputDenied(tool_call_id=CALL, reason="not today"),
    ToolNotExecuted(tool_call_id=CALL, tool_name="deploy", reason="tool_inactive"),
]


@pytest.mark.parametrize("version", [5, 6, 7])
@pytest.mark.parametrize("result", RESULTS, ids=lambda r: r.type)
async def test_a_settled_call_patches_its_earlier_message_as_folding_it_there_would(
    version: int, result: ToolResultChunk
) -> None:
    earlier = await ui(_asked(version), client_version=version)
    shown = read_ui_message(earlier[:-1])
    # Where a reload shows the result: folded into the earlier message itself.
    there = read_ui_message(await ui([*_asked(version), result], client_version=version))

    settled = ToolSettled(message_id="m1", tool_name="deploy", result=result)
    answer = [StartStep(step_number=0), TextStart(id="t"), TextDelta(id="t", delta="Hi")]
    later = await ui(
        [Start(message_id="m2"), settled, *answer, TextEnd(id="t")], client_version=version
    )
    [part] = [c for c in later if c["type"] == "data-tool-settled"]
    assert part["transient"] is True
    assert part["data"]["messageId"] == "m1" and part["data"]["toolCallId"] == CALL
    assert _apply(shown, part["data"]) == there
    # The new answer holds only its own text: the call is not announced, nor kept in it.
    assert read_ui_message(later)["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Hi", "state": "done"},
    ]
    assert not any(c["type"].startswith("tool-") for c in later)


async def test_a_cancelled_call_reads_as_the_engine_says_it_and_other_errors_stay_masked() -> None:
    chunks = [
        StartStep(step_number=0),
        ToolInputAvailable(tool_call_id="a", tool_name="deploy", input={}),
        ToolInputAvailable(tool_call_id="b", tool_name="deploy", input={}),
        ToolCancelled(tool_call_id="a"),
        ToolOutputError(tool_call_id="b", error_text="secret stack trace"),
        FinishStep(step_number=0, finish_reason="stop"),
    ]
    errors = [c for c in await ui(chunks) if c["type"] == "tool-output-error"]
    assert errors == [
        {"type": "tool-output-error", "toolCallId": "a", "errorText": "cancelled: a new message was sent"},
        {"type": "tool-output-error", "toolCallId": "b", "errorText": "An error occurred."},
    ]  # fmt: skip


async def test_a_cancelled_result_for_an_unannounced_call_is_dropped() -> None:
    out = await ui([StartStep(step_number=0), ToolCancelled(tool_call_id="ghost")])
    assert [c["type"] for c in out] == ["start", "start-step", "finish-step", "finish"]
