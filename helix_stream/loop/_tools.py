"""Runs one step's tool calls: the tool gate, input validation, concurrent execution.

A call to a tool the agent does not declare is answered ``tool_unavailable``; a call to a
switched-off tool ``tool_inactive`` (reference 000, "Switching tools off and on"). Neither
runs anything of the tool: no body, no approval, no client ask. Every call still gets a tool
message, so the conversation stays valid and the model can carry on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from ..chunks import (
    Chunk,
    ToolApprovalRequest,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputError,
)
from ..errors import describe_validation
from ..steps import ToolCall, ToolResult
from ..telemetry import Recorder
from ..tools import Tool, ToolContext, dump_output

__all__ = ["Gate", "ToolRun", "not_executed_message", "run_tool_calls"]

Gate = Callable[[ToolCall], Awaitable[Literal["tool_inactive"] | None]]
ContextFactory = Callable[[ToolCall, Tool, Any], ToolContext]


def not_executed_message(call: ToolCall, reason: str) -> str:
    """The tool message content for a call the gate refused (stable bytes)."""
    text = (
        f"The tool {call.name!r} is switched off; the call was not run."
        if reason == "tool_inactive"
        else f"There is no tool named {call.name!r}; the call was not run."
    )
    return json.dumps({"status": "not_executed", "reason": reason, "message": text})


@dataclass(slots=True)
class ToolRun:
    """The outcome of a step's tool calls: results in call order, and their tool messages."""

    results: list[ToolResult]
    messages: list[dict[str, Any]]


def _tool_message(call: ToolCall, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "content": content}


def _validation_text(call: ToolCall, exc: ValidationError | None) -> str:
    if exc is None:
        return f"Invalid input for tool {call.name!r}: the arguments are not a JSON object."
    return f"Invalid input for tool {call.name!r}: {describe_validation(exc)}"


async def run_tool_calls(
    calls: list[ToolCall],
    *,
    tools: Mapping[str, Tool],
    contexts: Mapping[str, Any],
    gate: Gate | None,
    make_context: ContextFactory,
    recorder: Recorder,
    run: ToolRun,
    approved: frozenset[str] = frozenset(),
    bind: Callable[[], AbstractContextManager[None]] | None = None,
) -> AsyncGenerator[Chunk, None]:
    """Yield the chunks of running ``calls``; fill ``run`` with results in call order.

    Tools run concurrently; each output is yielded as soon as it is ready. If the consumer
    stops or the task is cancelled, every tool still running is cancelled before this returns.
    Calls in ``approved`` run even though their tool needs approval: the app said yes.
    """
    results: dict[str, ToolResult] = {}
    contents: dict[str, str] = {}
    tasks: dict[asyncio.Task[Any], tuple[ToolCall, Tool, Any]] = {}

    def settle(result: ToolResult, content: str | None) -> None:
        results[result.tool_call_id] = result
        if content is not None:
            contents[result.tool_call_id] = content

    immediate: list[Chunk] = []
    to_start: list[tuple[ToolCall, Tool, Any]] = []
    for call in calls:
        tool = tools.get(call.name)
        reason = "tool_unavailable" if tool is None else (await gate(call) if gate else None)
        if reason is not None:
            settle(
                ToolResult(
                    tool_call_id=call.id, tool_name=call.name, status="not_executed", reason=reason
                ),
                not_executed_message(call, reason),
            )
            immediate.append(
                ToolNotExecuted(tool_call_id=call.id, tool_name=call.name, reason=reason)
            )
            continue
        assert tool is not None
        error: ValidationError | None = None
        parsed = None
        if isinstance(call.input, dict):
            try:
                parsed = tool.input_schema.model_validate(call.input)
            except ValidationError as exc:
                error = exc
        if parsed is None:
            text = _validation_text(call, error)
            settle(
                ToolResult(tool_call_id=call.id, tool_name=call.name, status="error", error=text),
                text,
            )
            immediate.append(ToolOutputError(tool_call_id=call.id, error_text=text))
            continue
        if tool.execute is None or (tool.needs_approval and call.id not in approved):
            # A client tool or one that waits for approval: the run pauses after this step.
            settle(ToolResult(tool_call_id=call.id, tool_name=call.name, status="pending"), None)
            if tool.needs_approval:
                immediate.append(
                    ToolApprovalRequest(approval_id=f"approval-{call.id}", tool_call_id=call.id)
                )
            continue
        to_start.append((call, tool, parsed))

    try:
        # Tasks copy the context they are created in: create them all inside the session
        # binding, with no yield in between, so every tool sees its session (and nothing leaks).
        with bind() if bind is not None else nullcontext():
            for call, tool, parsed in to_start:
                ctx = make_context(call, tool, contexts.get(tool.name))
                task = asyncio.ensure_future(_execute(tool, parsed, ctx, call, recorder))
                tasks[task] = (call, tool, ctx)
        for chunk in immediate:
            yield chunk

        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            # Emit in call order among those that finished together (deterministic streams).
            for task in sorted(done, key=lambda t: calls.index(tasks[t][0])):
                call, _, _ = tasks[task]
                result, content = task.result()
                settle(result, content)
                if result.status == "output":
                    yield ToolOutputAvailable(tool_call_id=call.id, output=result.output)
                else:
                    yield ToolOutputError(tool_call_id=call.id, error_text=result.error or "")
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    run.results = [results[call.id] for call in calls]
    # Tool messages in call order, never completion order: the next request's bytes must not
    # depend on which tool happened to finish first.
    run.messages = [_tool_message(call, contents[call.id]) for call in calls if call.id in contents]


async def _execute(
    tool: Tool, parsed: Any, ctx: ToolContext, call: ToolCall, recorder: Recorder
) -> tuple[ToolResult, str]:
    with recorder.tool_call(call=call, tool_context=ctx.context) as handle:
        try:
            output = await tool.run(parsed, ctx)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            text = f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}"
            result = ToolResult(
                tool_call_id=call.id, tool_name=call.name, status="error", error=text
            )
            recorder.tool_finished(handle, result=result, error=exc)
            return result, text
        content = dump_output(output)
        if isinstance(output, BaseModel):
            output = output.model_dump(mode="json")
        result = ToolResult(
            tool_call_id=call.id, tool_name=call.name, status="output", output=output
        )
        recorder.tool_finished(handle, result=result)
        return result, content
