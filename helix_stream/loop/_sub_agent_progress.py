"""A sub-agent's progress, shown live in the parent's chat: ``as_tool(stream_progress=True)``.

While the child agent runs, what it writes and the tools it calls reach the parent's stream as
*preliminary output* of the parent's tool call: :class:`~helix_stream.chunks.ToolOutputPreliminary`
chunks, which the UI stream sends as the AI SDK's ``tool-output-available`` with
``preliminary: true`` (docs/ui-message-stream.md, "Sub-agent progress"). Each one carries the
whole progress so far, not a delta (the client replaces a tool part's output with each)::

    {"text": "What the child has written so far",
     "toolCalls": [{"toolCallId": "call_1", "toolName": "search", "input": {"q": "x"},
                    "state": "output-available"}]}

``state`` is the tool part state of the AI SDK: ``input-streaming``, ``input-available``,
``approval-requested``, ``output-available``, ``output-error`` or ``output-denied``. A tool's
output is not repeated in the progress (it can be large, and each progress value is sent
whole); the text of the child's steps is joined by a blank line.

The progress is for the user's eyes only: the parent model, the stored log and the call's
result never see it. The call's result stays what it is without progress (the child's answer),
and its final ``tool-output-available`` (no ``preliminary``) replaces the last progress value.

This module owns the fold (:class:`ChildProgress`) and how often a value is sent
(:func:`relay_progress`): at once when a tool call changes or a step or text part ends, and at
most every :data:`PROGRESS_INTERVAL` seconds while text streams.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterable, Callable
from typing import Any, Literal

from ..chunks import (
    FinishStep,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolCancelled,
    ToolInputAvailable,
    ToolInputStart,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    ToolOutputPreliminary,
)

__all__ = ["PROGRESS_INTERVAL", "ChildProgress", "relay_progress"]

PROGRESS_INTERVAL = 0.05
"""Seconds between two progress values while the child's text streams (a value is the whole
text so far: one per delta would send the text's square)."""

Change = Literal["text", "now", "flush"]
"""How a chunk changed the progress: ``text`` (send when the interval allows), ``now`` (send at
once), ``flush`` (send what is not sent yet)."""

# The tool part state each way a child's call ends leaves it in (the AI SDK's names).
_ENDED: dict[type, str] = {
    ToolOutputAvailable: "output-available",
    ToolOutputError: "output-error",
    ToolNotExecuted: "output-error",
    ToolCancelled: "output-error",
    ToolOutputDenied: "output-denied",
    ToolApprovalRequest: "approval-requested",
}


class ChildProgress:
    """Folds a child run's chunks into its progress value (the module docstring's shape)."""

    __slots__ = ("_calls", "_open", "_texts")

    def __init__(self) -> None:
        self._texts: list[str] = []  # one entry per text part, in order
        self._open: dict[str, int] = {}  # open text part id -> its index in _texts
        self._calls: dict[str, dict[str, Any]] = {}  # toolCallId -> its entry, in call order

    def see(self, chunk: Any) -> Change | None:
        """Fold one chunk; say how the progress changed (``None``: it did not)."""
        cls = chunk.__class__
        if cls is TextDelta:
            if not chunk.delta:
                return None
            index = self._open.get(chunk.id)
            if index is None:  # a delta without its start opens the part
                index = self._open[chunk.id] = len(self._texts)
                self._texts.append("")
            self._texts[index] += chunk.delta
            return "text"
        if cls is TextStart:
            self._open[chunk.id] = len(self._texts)
            self._texts.append("")
            return None
        if cls is TextEnd:
            self._open.pop(chunk.id, None)
            return "flush"
        if cls is FinishStep:
            self._open.clear()
            return "flush"
        return self._see_call(chunk)

    def _see_call(self, chunk: Any) -> Change | None:
        cls = chunk.__class__
        if cls is ToolInputStart:
            self._calls[chunk.tool_call_id] = {
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
                "input": None,
                "state": "input-streaming",
            }
            return "now"
        if cls is ToolInputAvailable:
            self._calls[chunk.tool_call_id] = {
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
                "input": chunk.input,
                "state": "input-available",
            }
            return "now"
        state = _ENDED.get(cls)
        if state is None:
            return None
        entry = self._calls.get(chunk.tool_call_id)
        if entry is None:  # a gated call the child's stream never announced
            name = getattr(chunk, "tool_name", "")
            entry = {"toolCallId": chunk.tool_call_id, "toolName": name, "input": None}
        self._calls[chunk.tool_call_id] = {**entry, "state": state}
        return "now"

    def value(self) -> dict[str, Any]:
        """The progress so far: a new value each time (a sent one is never changed after)."""
        text = "\n\n".join(part for part in self._texts if part)
        return {"text": text, "toolCalls": [dict(entry) for entry in self._calls.values()]}


async def relay_progress(
    chunks: AsyncIterable[Any],
    tool_call_id: str,
    write: Callable[[ToolOutputPreliminary], None],
    *,
    interval: float = PROGRESS_INTERVAL,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Run the child by reading ``chunks`` to the end, writing its progress for the call
    ``tool_call_id`` through ``write`` (see the module docstring for when)."""
    progress = ChildProgress()
    unsent = False
    last = float("-inf")
    async for chunk in chunks:
        change = progress.see(chunk)
        if change is None:
            continue
        if change == "text":
            unsent = True
            if clock() - last < interval:
                continue
        elif change == "flush" and not unsent:
            continue
        write(ToolOutputPreliminary(tool_call_id=tool_call_id, output=progress.value()))
        unsent = False
        last = clock()
