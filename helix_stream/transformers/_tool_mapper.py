"""The tool calls of one UI stream: which calls the client knows, and each call's UI chunks.

Owned here: :class:`ToolMapper`, which maps a tool call's chunks (input start, delta and
available; outputs, preliminary outputs, errors, denials, cancellations; not-executed calls;
approval and sign-in requests; the settling of a call of an earlier message) to UI chunks, and
remembers which calls the client has been told of: the client throws on a result for a tool
part it does not know. The wire form of a call's end is :func:`result_chunk`'s; which chunk
types a client's major gets at all is :mod:`._ui_versions`'. The mapper's dispatch calls the
handlers here directly.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from helix_stream.chunks import (
    ToolApprovalRequest,
    ToolAuthorizationRequest,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolNotExecuted,
    ToolOutputPreliminary,
    ToolResultChunk,
    ToolSettled,
)
from helix_stream.transformers._tool_results import result_chunk

__all__ = ["ToolMapper"]

logger = logging.getLogger("helix_stream.transformers")

# The data part that settles a tool part of an earlier message, and the state each result
# chunk type leaves a tool part in.
_SETTLED = "data-tool-settled"
_RESULT_STATES = {
    "tool-output-available": "output-available",
    "tool-output-error": "output-error",
    "tool-output-denied": "output-denied",
}


class ToolMapper:
    """The tool calls of one stream (see the module docstring).

    Example:
        >>> sent = []
        >>> tools = ToolMapper(version=7, emit=sent.append, error_text=str, continued_message=None)
        >>> tools.input_available(ToolInputAvailable(tool_call_id="c1", tool_name="f", input={}))
        >>> [c["type"] for c in sent]
        ['tool-input-available']
    """

    __slots__ = ("_emit", "_error_text", "_streaming", "_tools", "_version")

    def __init__(
        self,
        *,
        version: int,
        emit: Callable[[dict[str, Any]], None],
        error_text: Callable[[BaseException], str],
        continued_message: Mapping[str, Any] | None,
    ) -> None:
        self._version = version
        self._emit = emit
        self._error_text = error_text
        self._tools: dict[str, str] = {}  # toolCallId -> tool name, for announced calls
        self._streaming: set[str] = set()  # toolCallIds with a tool-input-start
        for part in (continued_message or {}).get("parts", ()):
            kind = part.get("type", "")
            if kind == "dynamic-tool" or kind.startswith("tool-"):
                self._tools[part.get("toolCallId", "")] = part.get("toolName") or kind[5:]

    def reset(self) -> None:
        """Forget which inputs are streaming (a redone step streams them again)."""
        self._streaming.clear()

    def input_start(self, chunk: ToolInputStart) -> None:
        """Announce a call whose input streams."""
        self._tools[chunk.tool_call_id] = chunk.tool_name
        self._streaming.add(chunk.tool_call_id)
        self._emit(
            {
                "type": "tool-input-start",
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
            }
        )

    def input_delta(self, chunk: ToolInputDelta) -> None:
        """A piece of a streaming input."""
        if chunk.tool_call_id in self._streaming:  # else: the input-available announces it
            self._emit(
                {
                    "type": "tool-input-delta",
                    "toolCallId": chunk.tool_call_id,
                    "inputTextDelta": chunk.delta,
                }
            )

    def input_available(self, chunk: ToolInputAvailable) -> None:
        """A call's whole input (announcing the call if its input did not stream)."""
        self._tools[chunk.tool_call_id] = chunk.tool_name
        self._streaming.discard(chunk.tool_call_id)
        self._emit(
            {
                "type": "tool-input-available",
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
                "input": chunk.input,
            }
        )

    def _announced(self, tool_call_id: str, what: str) -> bool:
        if tool_call_id in self._tools:
            return True
        # The client throws on a result for a tool part it does not know, and without a tool
        # name the part cannot be announced here.
        logger.warning("dropping %s for unannounced tool call %r", what, tool_call_id)
        return False

    def result(self, chunk: ToolResultChunk | ToolOutputPreliminary) -> None:
        """How an announced call ended (or, preliminary, how far it got)."""
        if self._announced(chunk.tool_call_id, chunk.type):
            self._emit(result_chunk(chunk, self._version, self._error_text))

    def not_executed(self, chunk: ToolNotExecuted) -> None:
        """A call the gate refused, announced first if the client has not seen it."""
        if chunk.tool_call_id not in self._tools:
            # The gate refused a call the client has not seen: announce it (its input is not
            # known here; an empty object is what a tool call's input always is).
            self.input_available(
                ToolInputAvailable(
                    tool_call_id=chunk.tool_call_id, tool_name=chunk.tool_name, input={}
                )
            )
        self._emit(result_chunk(chunk, self._version, self._error_text))

    def settled(self, chunk: ToolSettled) -> None:
        """The end of a call of an earlier message, as a transient data part."""
        # The call is a part of an earlier message, which this stream cannot reach (a stream
        # folds into one message): a transient data part says what that part becomes — the
        # state and values the client's own fold of this result would give it, as a reload
        # shows it. A page applies it to that message (README, "A call left waiting, then a
        # new message").
        result = result_chunk(chunk.result, self._version, self._error_text)
        data: dict[str, Any] = {
            "messageId": chunk.message_id,
            "toolCallId": chunk.tool_call_id,
            "state": _RESULT_STATES[result["type"]],
        }
        data.update((k, result[k]) for k in ("output", "errorText") if k in result)
        self._emit({"type": _SETTLED, "data": data, "transient": True})

    def approval(self, chunk: ToolApprovalRequest) -> None:
        """An announced call waits for the user's approval."""
        if self._announced(chunk.tool_call_id, "tool-approval-request"):
            self._emit(
                {
                    "type": "tool-approval-request",
                    "approvalId": chunk.approval_id,
                    "toolCallId": chunk.tool_call_id,
                }
            )

    def authorization(self, chunk: ToolAuthorizationRequest) -> None:
        """A call waits for the user to sign in."""
        # A data part, which every major accepts: kept in the message (an id per call, so a
        # second sign-in link for the same call replaces the first) for the page to render
        # as a sign-in link (docs/ui-message-stream.md, "Sign-in links").
        data = {"toolCallId": chunk.tool_call_id, "strategy": chunk.strategy, "url": chunk.url}
        part_id = f"authorization-{chunk.tool_call_id}"
        self._emit({"type": "data-authorization", "id": part_id, "data": data})
