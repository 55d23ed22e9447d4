"""How a tool call's end (or, preliminary, how far it got) becomes one AI SDK UI chunk.

Owned here, apart from the mapper that keeps the stream's order: :func:`result_chunk` is the one
place that decides the wire form of a tool's result, error, denial, cancellation and
preliminary output for a client of each ``ai`` major version.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helix_stream.chunks import (
    ToolCancelled,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputError,
    ToolOutputPreliminary,
    ToolResultChunk,
    cancelled_text,
    not_executed_output,
)
from helix_stream.errors import ToolFailedError

__all__ = ["result_chunk"]


def result_chunk(
    chunk: ToolResultChunk | ToolOutputPreliminary,
    version: int,
    error_text: Callable[[BaseException], str],
) -> dict[str, Any]:
    """The UI chunk of how an announced call ended, for an ``ai@<version>`` client (or, for a
    preliminary output, how far it got); ``error_text`` masks a tool's error."""
    call_id = chunk.tool_call_id
    if isinstance(chunk, ToolOutputPreliminary):
        # The AI SDK's preliminary tool output: the client shows it in the tool part until the
        # final output replaces it (docs/ui-message-stream.md, "Sub-agent progress").
        out = {"type": "tool-output-available", "toolCallId": call_id, "output": chunk.output}
        return {**out, "preliminary": True}
    if isinstance(chunk, ToolOutputAvailable):
        return {"type": "tool-output-available", "toolCallId": call_id, "output": chunk.output}
    if isinstance(chunk, ToolNotExecuted):
        output = not_executed_output(chunk.tool_name, chunk.reason)
        return {"type": "tool-output-available", "toolCallId": call_id, "output": output}
    if isinstance(chunk, ToolOutputError):
        # Masked like any error (as the AI SDK passes tool errors through onError): a
        # tool's exception text may hold what a user must not see.
        text = error_text(ToolFailedError(chunk.error_text))
    elif isinstance(chunk, ToolCancelled):
        text = cancelled_text(chunk.reason)  # the engine's own words: shown as they are
    elif version >= 6:
        return {"type": "tool-output-denied", "toolCallId": call_id}
    else:  # ai@5 has no denied state: the closest thing it shows is a tool error.
        reason = f" Reason: {chunk.reason}" if chunk.reason else ""
        text = f"The tool call was denied.{reason}"
    return {"type": "tool-output-error", "toolCallId": call_id, "errorText": text}
