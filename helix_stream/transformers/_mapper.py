"""The per-chunk mapping from internal chunks to AI SDK UI chunk dicts: the dispatcher.

This module owns :class:`UIChunkMapper`: one instance per UI stream, holding what the
protocol's ordering rules need to remember of the message and its steps (is ``start`` sent, is
a step open, did it finish or abort). It is driven by
:func:`helix_stream.transformers.to_ui_message_stream`, which owns iteration and closing.

The mapper dispatches each chunk by its type to one handler: its own for the message, its
steps, errors, sources and data parts; :class:`~._text_parts.OpenParts`' for text and
reasoning; :class:`~._tool_mapper.ToolMapper`' for tool calls. Which chunk types a client's
``ai`` major gets is :mod:`._ui_versions`'; the error text a client sees is
:class:`~._error_text.ErrorMask`'s.
Every handler sends plain dicts through :meth:`UIChunkMapper._emit`, the single exit where the
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
    ToolSettled,
)
from helix_stream.errors import ERROR_MASK, ModelUnavailableError
from helix_stream.transformers._error_text import ErrorMask
from helix_stream.transformers._fold import UIMessageFold
from helix_stream.transformers._text_parts import OpenParts
from helix_stream.transformers._tool_mapper import ToolMapper
from helix_stream.transformers._ui_versions import ALLOWED, gated

__all__ = ["ERROR_MASK", "UIChunk", "UIChunkMapper"]

logger = logging.getLogger("helix_stream.transformers")

UIChunk = dict[str, Any]


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
        self._allowed = ALLOWED[client_version]
        self._version = client_version
        self._send_start = send_start
        self._send_finish = send_finish
        self._metadata = message_metadata
        self._message_id = message_id
        self._generate_id = generate_message_id
        self._started = self._step_open = False
        self._last_step_reason: FinishReason | None = None
        self._unknown: set[type] = set()
        self._out: list[UIChunk] = []
        self._error_text = ErrorMask(on_error=on_error).text
        self._parts = parts = OpenParts(emit=self._emit)
        self._tools = tools = ToolMapper(
            version=client_version,
            emit=self._emit,
            error_text=self._error_text,
            continued_message=continued_message,
        )
        drop = self._drop
        handlers: dict[type, Callable[[Any], None]] = {
            TextDelta: parts.text_delta,
            TextStart: parts.text_start,
            TextEnd: parts.text_end,
            ReasoningDelta: parts.reasoning_delta if send_reasoning else drop,
            ReasoningStart: parts.reasoning_start if send_reasoning else drop,
            ReasoningEnd: parts.reasoning_end if send_reasoning else drop,
            ToolInputStart: tools.input_start,
            ToolInputDelta: tools.input_delta,
            ToolInputAvailable: tools.input_available,
            ToolOutputAvailable: tools.result,
            ToolOutputPreliminary: tools.result,
            ToolOutputError: tools.result,
            ToolCancelled: tools.result,
            ToolNotExecuted: tools.not_executed,
            ToolApprovalRequest: tools.approval,
            ToolAuthorizationRequest: tools.authorization,
            ToolOutputDenied: tools.result,
            ToolSettled: tools.settled,
            SteeringMessage: self._steering,
            DataChunk: self._data,
            SourceUrl: self._source if send_sources else drop,
            StartStep: self._start_step,
            FinishStep: self._finish_step,
            ResetStep: self._reset_step,
            Start: self._start,
            Finish: self._finish,
            ErrorChunk: self._error_chunk,
            Abort: self._abort,
            # Internal only: never shown to a chat UI.
            ContextRowChunk: drop,
            ContextSkipped: drop,
        }
        self._dispatch = gated(handlers, client_version, drop)

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

    def _close_step(self) -> None:
        self._parts.close()
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
        self._parts.close()
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

    def _reset_step(self, chunk: ResetStep) -> None:
        """A redone step: ai@7 drops its parts (open ones too); older clients get the failure."""
        if self._version < 7:
            self._error_chunk(ErrorChunk(error=ModelUnavailableError(_RESET_TEXT)))
            return
        self._parts.reset()
        self._tools.reset()
        self._emit({"type": "reset-step"})

    # -- sources, data and steering ---------------------------------------------------------

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

    def _steering(self, chunk: SteeringMessage) -> None:
        self._emit({"type": "steering-message", "id": chunk.id, "parts": list(chunk.parts)})
