"""A side-effect call's run between its two ledger records (``hs.tool(side_effects=True)``).

The loop knows no store: a session gives it a :class:`CallRecorder` (``CallContexts.ledger``),
and :func:`recorded` wraps one call's execution with it. The in-flight record is written
**before** the tool runs; when that write fails the tool does not run at all (the call gets
an error result the model reads), since a call the ledger does not know could run twice
after a crash. The result is recorded after; when that write fails the result still reaches
the model (the step's own write stores it; a later turn never takes a call whose tool
message is in the log for one in flight).

A plain ``stream_text`` run has no recorder: its side-effect tools run as any other.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import Any, Protocol

from ..steps import ToolCall, ToolResult
from ..tools import Tool
from ._tool_media import ToolContent

__all__ = ["CallRecorder", "recorded"]

logger = logging.getLogger("helix_stream.tools")

Job = Coroutine[Any, Any, tuple[ToolResult, ToolContent | None]]


class CallRecorder(Protocol):
    """Where a session records its side-effect calls (``session/_side_effects.py``)."""

    async def started(self, call: ToolCall, tool: Tool, key: str) -> None:
        """Record that ``call`` (idempotency key ``key``) is about to run."""
        ...

    async def ended(self, call: ToolCall, result: ToolResult) -> None:
        """Record how ``call`` ended."""
        ...


async def recorded(
    job: Job, recorder: CallRecorder, call: ToolCall, tool: Tool, key: str
) -> tuple[ToolResult, ToolContent | None]:
    """Run ``job`` (the call's execution) between its ledger records (module docstring)."""
    try:
        await recorder.started(call, tool, key)
    except Exception as exc:
        job.close()  # never started: nothing of the tool ran
        logger.error(
            "side-effect call %s (%s) not run: its in-flight record failed: %s",
            call.id,
            call.name,
            type(exc).__name__,
            extra={"event": "core.tool.not_recorded", "tool_call_id": call.id},
        )
        text = (
            f"Tool {call.name!r} was not run: the call could not be recorded before it ran "
            "(the session's store failed). Nothing happened; try again later."
        )
        error = ToolResult(tool_call_id=call.id, tool_name=call.name, status="error", error=text)
        return error, text
    result, content = await job
    try:
        await recorder.ended(call, result)
    except Exception as exc:
        logger.error(
            "side-effect call %s (%s) ran but its result was not recorded: %s",
            call.id,
            call.name,
            type(exc).__name__,
            extra={"event": "core.tool.result_not_recorded", "tool_call_id": call.id},
        )
    return result, content
