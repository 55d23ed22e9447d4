"""The per-chunk mapping from internal chunks to AI SDK UI chunk dicts, with its repairs.

This module owns :class:`UIChunkMapper`: one instance per UI stream, holding what the
protocol's ordering rules need to remember (is ``start`` sent, is a step open, which text and
reasoning parts are open under which wire id, which tool calls the client knows). It is driven
by :func:`helix_stream.transformers.to_ui_message_stream`, which owns iteration and closing.

Each handler appends plain dicts through :meth:`UIChunkMapper._emit`, the single exit where the
per-version whitelist is enforced and the ``on_finish`` fold is fed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from helix_stream.chunks import (
    Abort,
    ContextRowChunk,
    ContextSkipped,
    DataChunk,
    ErrorChunk,
    Finish,
    FinishReason,
    FinishStep,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResetStep,
    SourceUrl,
    Start,
    StartStep,
    SteeringMessage,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolAuthorizationRequest,
    ToolCancelled,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    ToolOutputPreliminary,
    ToolResultChunk,
    ToolSettled,
)
from helix_stream.errors import ERROR_MASK, ModelUnavailableError
from helix_stream.transformers._fold import UIMessageFold
from helix_stream.transformers._tool_results import result_chunk

__all__ = ["ERROR_MASK", "UIChunk", "UIChunkMapper"]

logger = logging.getLogger("helix_stream.transformers")

UIChunk = dict[str, Any]


# The chunk types each client major version accepts (the ``ai`` package's uiMessageChunkSchema;
# docs/ui-message-stream.md, "Chunk types"), ``data-*`` aside.
_V5 = frozenset(
    {
        "start", "start-step", "finish-step", "finish", "abort", "error",
        "text-start", "text-delta", "text-end",
        "reasoning-start", "reasoning-delta", "reasoning-end",
        "tool-input-start", "tool-input-delta", "tool-input-available", "tool-input-error",
        "tool-output-available", "tool-output-error",
        "source-url", "source-document", "file", "message-metadata",
    }
)  # fmt: skip
_V6 = _V5 | {"tool-approval-request", "tool-output-denied"}
_V7 = _V6 | {"tool-approval-response", "custom", "reasoning-file", "reset-step", "steering-message"}
# The UI chunk types (besides ``data-*``) that an ``ai`` client of each major accepts.
_ALLOWED = {5: _V5, 6: _V6, 7: _V7}

# The data part that settles a tool part of an earlier message, and the state each result
# chunk type leaves a tool part in.
_SETTLED = "data-tool-settled"
_RESULT_STATES = {
    "tool-output-available": "output-available",
    "tool-output-error": "output-error",
    "tool-output-denied": "output-denied",
}


# What a client before ai@7 gets for a redone step: it cannot drop the parts it has.
_RESET_TEXT = "The answer broke off and was started again; reload the chat to see it."


class UIChunkMapper:
    """Maps one stream's internal chunks to UI chunk dicts (see the module docstring)."""

    def __init__(
        self,
        *,
        client_version: int,
        send_reasoning: bool,
        send_start: bool,
        send_sources: bool = False,
        send_finish: bool,
        message_metadata: Callable[[Start | Finish], Mapping[str, Any] | None] | None,
        message_id: str | None,
        generate_message_id: Callable[[], str] | None,
        on_error: Callable[[BaseException], str] | None,
        continued_message: Mapping[str, Any] | None,
        fold: UIMessageFold | None,
    ) -> None:
        self.fold = fold
        self.finished = False  # finish (or the error's finish, or abort) was handled
        self.aborted = False  # the run was stopped (abort was handled)
        self.finish_reason: FinishReason | None = None
        self._allowed = _ALLOWED[client_version]
        self._version = client_version
        self._send_start = send_start
        self._send_finish = send_finish
        self._metadata = message_metadata
        self._message_id = message_id
        self._generate_id = generate_message_id
        self._on_error = on_error
        self._started = self._step_open = False
        self._last_step_reason: FinishReason | None = None
        self._text: dict[str, str] = {}  # source id -> wire id of the open text parts
        self._reasoning: dict[str, str] = {}
        self._used_text: set[str] = set()
        self._used_reasoning: set[str] = set()
        self._tools: dict[str, str] = {}  # toolCallId -> tool name, for announced calls
        self._streaming: set[str] = set()  # toolCallIds with a tool-input-start
        self._unknown: set[type] = set()
        self._out: list[UIChunk] = []
        for part in (continued_message or {}).get("parts", ()):
            kind = part.get("type", "")
            if kind == "dynamic-tool" or kind.startswith("tool-"):
                self._tools[part.get("toolCallId", "")] = part.get("toolName") or kind[5:]
        drop = self._drop
        self._dispatch: dict[type, Callable[[Any], None]] = {
            TextDelta: self._text_delta,
            TextStart: self._text_start,
            TextEnd: self._text_end,
            ReasoningDelta: self._reasoning_delta if send_reasoning else drop,
            ReasoningStart: self._reasoning_start if send_reasoning else drop,
            ReasoningEnd: self._reasoning_end if send_reasoning else drop,
            ToolInputStart: self._tool_input_start,
            ToolInputDelta: self._tool_input_delta,
            ToolInputAvailable: self._tool_input_available,
            ToolOutputAvailable: self._tool_result,
            # Only ai@6 and later: ai@5.0.0's chunk schema refuses the `preliminary` key.
            ToolOutputPreliminary: self._tool_result if client_version >= 6 else drop,
            ToolOutputError: self._tool_result,
            ToolCancelled: self._tool_result,
            ToolNotExecuted: self._tool_not_executed,
            ToolApprovalRequest: self._approval if client_version >= 6 else drop,
            ToolAuthorizationRequest: self._authorization,
            ToolOutputDenied: self._tool_result,
            ToolSettled: self._settled,
            # ai@7 shows a steered message in place; ai@5/6 know no such part (their
            # clients see it in the stored messages: GET .../messages).
            SteeringMessage: self._steering if client_version >= 7 else drop,
            DataChunk: self._data,
            SourceUrl: self._source if send_sources else drop,
            StartStep: self._start_step,
            FinishStep: self._finish_step,
            ResetStep: lambda chunk: _reset_step(self, chunk),
            Start: self._start,
            Finish: self._finish,
            ErrorChunk: self._error_chunk,
            Abort: self._abort,
            # Internal only: never shown to a chat UI.
            ContextRowChunk: drop,
            ContextSkipped: drop,
        }

    # -- entry points ------------------------------------------------------------------------

    def handle(self, chunk: Any) -> list[UIChunk]:
        """The UI chunks for one source chunk (often one; none for dropped chunks)."""
        out = self._out = []
        if self.finished:
            return out  # after finish (or an error) the source is only drained
        method = self._dispatch.get(chunk.__class__)
        if method is None:
            self._drop_unknown(chunk)
            return out
        if not self._started and chunk.__class__ is not Start:
            self._start(Start())
        method(chunk)
        return out

    def fail(self, exc: BaseException) -> list[UIChunk]:
        """The UI chunks that end the stream after the source raised ``exc``."""
        out = self._out = []
        if self.finished:
            logger.error("the chunk source raised after finish", exc_info=exc)
            return out
        self._error_chunk(ErrorChunk(error=exc))
        return out

    def end(self) -> list[UIChunk]:
        """The UI chunks that complete a source that ended without ``finish``."""
        out = self._out = []
        if not self._started:
            self._start(Start())
        if not self.finished:
            self._finish(Finish(finish_reason=self._last_step_reason or "other"))
        return out

    # -- output ------------------------------------------------------------------------------

    def _emit(self, chunk: UIChunk, send: bool = True) -> None:
        kind: str = chunk["type"]
        if kind not in self._allowed and not kind.startswith("data-"):
            # Unreachable by construction; the boundary check stays as the protocol demands.
            logger.error("refusing UI chunk type %r for an ai@%d client", kind, self._version)
            return
        if self.fold is not None:
            self.fold.add(chunk)
        if send:
            self._out.append(chunk)

    def _drop(self, chunk: Any) -> None:
        pass

    def _steering(self, chunk: SteeringMessage) -> None:
        self._emit({"type": "steering-message", "id": chunk.id, "parts": list(chunk.parts)})

    def _drop_unknown(self, chunk: Any) -> None:
        if chunk.__class__ not in self._unknown:
            self._unknown.add(chunk.__class__)
            logger.warning("dropping a chunk of unknown type %s", chunk.__class__.__name__)

    def _call_metadata(self, chunk: Start | Finish) -> Mapping[str, Any] | None:
        if self._metadata is None:
            return None
        try:
            return self._metadata(chunk)
        except Exception:
            logger.exception("message_metadata raised; sending no metadata")
            return None

    def _error_text(self, exc: BaseException) -> str:
        if self._on_error is None:
            return ERROR_MASK
        try:
            text = self._on_error(exc)
        except Exception:
            logger.exception("on_error raised; sending the masked error text")
            return ERROR_MASK
        return text if isinstance(text, str) else ERROR_MASK

    # -- message and steps -------------------------------------------------------------------

    def _start(self, chunk: Start) -> None:
        if self._started:
            return  # one message per stream
        self._started = True
        message_id = self._message_id
        if message_id is None and self._generate_id is not None:
            message_id = self._generate_id()
        if message_id is None:
            message_id = chunk.message_id
        out: UIChunk = {"type": "start"}
        if message_id is not None:
            out["messageId"] = message_id
        metadata = self._call_metadata(chunk)
        if metadata is not None:
            out["messageMetadata"] = metadata
        self._emit(out, self._send_start)

    def _start_step(self, chunk: StartStep) -> None:
        if self._step_open:
            self._close_step()
        self._step_open = True
        self._emit({"type": "start-step"})

    def _close_parts(self) -> None:
        for wire in self._reasoning.values():
            self._emit({"type": "reasoning-end", "id": wire})
        for wire in self._text.values():
            self._emit({"type": "text-end", "id": wire})
        self._reasoning.clear()
        self._text.clear()

    def _close_step(self) -> None:
        self._close_parts()
        if self._step_open:
            self._step_open = False
            self._emit({"type": "finish-step"})

    def _finish_step(self, chunk: FinishStep) -> None:
        self._last_step_reason = chunk.finish_reason
        self._close_step()

    def _finish(self, chunk: Finish) -> None:
        self._close_step()
        self.finished = True
        self.finish_reason = chunk.finish_reason
        out: UIChunk = {"type": "finish", "finishReason": chunk.finish_reason}
        metadata = self._call_metadata(chunk)
        if metadata is not None:
            out["messageMetadata"] = metadata
        self._emit(out, self._send_finish)

    def _error_chunk(self, chunk: ErrorChunk) -> None:
        if not self._started:
            self._start(Start())
        # The open parts end first: a client keeps a part that never got its end in state
        # "streaming" for good (a cursor that blinks forever), and `error` ends its reading.
        self._close_parts()
        self._emit({"type": "error", "errorText": self._error_text(chunk.error)})
        self._finish(Finish(finish_reason="error"))

    def _abort(self, chunk: Abort) -> None:
        # A stopped run: what was streamed stays, its parts end, the message is marked as the
        # session stores it (metadata {"interrupted": true}: the screen stays the same after a
        # reload), and `abort` (not `finish`) tells the client the answer was cut on purpose.
        self._close_step()
        self.finished = self.aborted = True
        self._emit({"type": "message-metadata", "messageMetadata": {"interrupted": True}})
        out: UIChunk = {"type": "abort"}
        if chunk.reason is not None:
            out["reason"] = chunk.reason
        self._emit(out)

    # -- text and reasoning ------------------------------------------------------------------

    @staticmethod
    def _fresh_id(source_id: str, used: set[str]) -> str:
        wire, n = source_id, 1
        while wire in used:  # the AI SDK client folds a reused id into the old part
            wire, n = f"{source_id}-{n}", n + 1
        used.add(wire)
        return wire

    def _text_start(self, chunk: TextStart) -> None:
        if chunk.id not in self._text:
            wire = self._text[chunk.id] = self._fresh_id(chunk.id, self._used_text)
            self._emit({"type": "text-start", "id": wire})

    def _text_delta(self, chunk: TextDelta) -> None:
        wire = self._text.get(chunk.id)
        if wire is None:  # a delta without its start: open the part first
            self._text_start(TextStart(id=chunk.id))
            wire = self._text[chunk.id]
        self._emit({"type": "text-delta", "id": wire, "delta": chunk.delta})

    def _text_end(self, chunk: TextEnd) -> None:
        wire = self._text.pop(chunk.id, None)
        if wire is not None:
            self._emit({"type": "text-end", "id": wire})

    def _reasoning_start(self, chunk: ReasoningStart) -> None:
        if chunk.id not in self._reasoning:
            wire = self._reasoning[chunk.id] = self._fresh_id(chunk.id, self._used_reasoning)
            self._emit({"type": "reasoning-start", "id": wire})

    def _reasoning_delta(self, chunk: ReasoningDelta) -> None:
        wire = self._reasoning.get(chunk.id)
        if wire is None:
            self._reasoning_start(ReasoningStart(id=chunk.id))
            wire = self._reasoning[chunk.id]
        self._emit({"type": "reasoning-delta", "id": wire, "delta": chunk.delta})

    def _reasoning_end(self, chunk: ReasoningEnd) -> None:
        wire = self._reasoning.pop(chunk.id, None)
        if wire is not None:
            self._emit({"type": "reasoning-end", "id": wire})

    # -- tools -------------------------------------------------------------------------------

    def _tool_input_start(self, chunk: ToolInputStart) -> None:
        self._tools[chunk.tool_call_id] = chunk.tool_name
        self._streaming.add(chunk.tool_call_id)
        self._emit(
            {
                "type": "tool-input-start",
                "toolCallId": chunk.tool_call_id,
                "toolName": chunk.tool_name,
            }
        )

    def _tool_input_delta(self, chunk: ToolInputDelta) -> None:
        if chunk.tool_call_id in self._streaming:  # else: the input-available announces it
            self._emit(
                {
                    "type": "tool-input-delta",
                    "toolCallId": chunk.tool_call_id,
                    "inputTextDelta": chunk.delta,
                }
            )

    def _tool_input_available(self, chunk: ToolInputAvailable) -> None:
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

    def _result(self, chunk: ToolResultChunk | ToolOutputPreliminary) -> UIChunk:
        return result_chunk(chunk, self._version, self._error_text)

    def _tool_result(self, chunk: ToolResultChunk | ToolOutputPreliminary) -> None:
        if self._announced(chunk.tool_call_id, chunk.type):
            self._emit(self._result(chunk))

    def _tool_not_executed(self, chunk: ToolNotExecuted) -> None:
        if chunk.tool_call_id not in self._tools:
            # The gate refused a call the client has not seen: announce it (its input is not
            # known here; an empty object is what a tool call's input always is).
            self._tool_input_available(
                ToolInputAvailable(
                    tool_call_id=chunk.tool_call_id, tool_name=chunk.tool_name, input={}
                )
            )
        self._emit(self._result(chunk))

    def _settled(self, chunk: ToolSettled) -> None:
        # The call is a part of an earlier message, which this stream cannot reach (a stream
        # folds into one message): a transient data part says what that part becomes — the
        # state and values the client's own fold of this result would give it, as a reload
        # shows it. A page applies it to that message (README, "A call left waiting, then a
        # new message").
        result = self._result(chunk.result)
        data: dict[str, Any] = {
            "messageId": chunk.message_id,
            "toolCallId": chunk.tool_call_id,
            "state": _RESULT_STATES[result["type"]],
        }
        data.update((k, result[k]) for k in ("output", "errorText") if k in result)
        self._emit({"type": _SETTLED, "data": data, "transient": True})

    def _approval(self, chunk: ToolApprovalRequest) -> None:
        if self._announced(chunk.tool_call_id, "tool-approval-request"):
            self._emit(
                {
                    "type": "tool-approval-request",
                    "approvalId": chunk.approval_id,
                    "toolCallId": chunk.tool_call_id,
                }
            )

    def _authorization(self, chunk: ToolAuthorizationRequest) -> None:
        # A data part, which every major accepts: kept in the message (an id per call, so a
        # second sign-in link for the same call replaces the first) for the page to render
        # as a sign-in link (docs/ui-message-stream.md, "Sign-in links").
        data = {"toolCallId": chunk.tool_call_id, "strategy": chunk.strategy, "url": chunk.url}
        part_id = f"authorization-{chunk.tool_call_id}"
        self._emit({"type": "data-authorization", "id": part_id, "data": data})

    # -- sources and data --------------------------------------------------------------------

    def _source(self, chunk: SourceUrl) -> None:
        out: UIChunk = {"type": "source-url", "sourceId": chunk.source_id, "url": chunk.url}
        if chunk.title is not None:
            out["title"] = chunk.title
        self._emit(out)

    def _data(self, chunk: DataChunk) -> None:
        out: UIChunk = {"type": f"data-{chunk.name}", "data": chunk.data}
        if chunk.id is not None:
            out["id"] = chunk.id
        if chunk.transient:
            out["transient"] = True
        self._emit(out)


def _reset_step(mapper: UIChunkMapper, chunk: ResetStep) -> None:
    """A redone step: ai@7 drops its parts (open ones too); older clients get the failure."""
    if mapper._version < 7:
        mapper._error_chunk(ErrorChunk(error=ModelUnavailableError(_RESET_TEXT)))
        return
    mapper._text.clear()
    mapper._reasoning.clear()
    mapper._streaming.clear()
    mapper._emit({"type": "reset-step"})
