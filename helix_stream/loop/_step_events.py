"""The lifecycle events of a step's model call and of its tool calls that did not run.

This module owns :func:`model_chunks` (a model call's chunks between its
``model-call-started`` and, when it fails, its ``model-call-ended``), :func:`model_call_ended`
(the event of a call that succeeded, once its step is built) and :func:`not_executed`
(``on_tool_call_end`` for the calls that did not run). The step itself is ``loop/_run.py``'s.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from .._event_stream import EventStream, ModelCallEnded, ModelCallStarted
from ..chunks import Chunk, ContextRowChunk, ContextSkipped
from ..steps import StepPerformance, ToolCall, ToolResult
from ._compaction import PreparedCall
from ._lifecycle import ToolWatch, outcome_of
from ._model_result import ModelResult
from ._step import step_result
from ._stream_retry import StepCall

__all__ = ["model_call_ended", "model_chunks", "not_executed"]


async def model_chunks(
    events: EventStream,
    session_id: str | None,
    step_number: int,
    call: StepCall,
    prepared: PreparedCall,
    runtime_context: Mapping[str, Any],
) -> AsyncGenerator[Chunk, None]:
    """The model call's chunks, after its ``model-call-started`` event; a call that fails
    ends with its ``model-call-ended`` (one that succeeds: when its step is built,
    :func:`model_call_ended`)."""
    model, params = prepared.params["model"], prepared.params
    if events.wants("model-call-started"):
        committed = prepared.context.chunks
        await events.emit(
            ModelCallStarted(
                session_id=session_id,
                step_number=step_number,
                model=model,
                params=params,
                runtime_context=runtime_context,
                context_rows=[c.row for c in committed if isinstance(c, ContextRowChunk)],
                skipped=[c for c in committed if isinstance(c, ContextSkipped)],
            )
        )
    try:
        async with aclosing(call.chunks()) as chunks:
            async for chunk in chunks:
                yield chunk
    except Exception as exc:
        if events.wants("model-call-ended"):
            end = ModelCallEnded(
                session_id=session_id,
                step_number=step_number,
                model=model,
                performance=call.performance(),
                error=exc,
            )
            await events.emit(end)
        raise


async def model_call_ended(
    events: EventStream,
    session_id: str | None,
    step_number: int,
    call: StepCall,
    prepared: PreparedCall,
    result: ModelResult,
    runtime_context: Mapping[str, Any],
    performance: StepPerformance,
) -> None:
    """The ``model-call-ended`` event of a call that succeeded, with its step so far: no
    tool results yet."""
    if events.wants("model-call-ended"):
        await events.emit(
            ModelCallEnded(
                session_id=session_id,
                step_number=step_number,
                model=prepared.params["model"],
                performance=call.performance(),
                step=step_result(
                    step_number, result, [], [], runtime_context, performance=performance
                ),
                response=result.response,
            )
        )


async def not_executed(
    events: EventStream,
    session_id: str | None,
    step_number: int,
    calls: Sequence[ToolCall],
    results: Sequence[ToolResult],
    executed: set[str],
) -> None:
    """``on_tool_call_end`` for the calls that did not run (refused, invalid, waiting)."""
    watch = ToolWatch.of(events, step_number, session_id)
    if watch is None:
        return
    by_id = {r.tool_call_id: r for r in results}
    for call in calls:
        if call.id not in executed and call.id in by_id:
            result = by_id[call.id]
            await watch.end(call, result, 0.0, outcome_of(result))
