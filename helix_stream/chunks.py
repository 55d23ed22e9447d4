"""The chunk vocabulary: one discriminated union that the loop emits and every consumer reads.

Chunks are cheap slotted dataclasses, not validated per chunk. Each class has a ``type``
class attribute (the discriminator; the AI SDK name where one exists). Field names are
snake_case; :mod:`helix_stream.transformers` maps them to the AI SDK's camelCase wire names
and drops the internal ones (``context-row``, ``context_skipped``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from ._step_parts import DataChunk, FinishReason, SourceUrl, Usage

if TYPE_CHECKING:
    from .steps import StepResult

__all__ = [
    "Abort",
    "Chunk",
    "ContextRowChunk",
    "ContextSkipped",
    "DataChunk",
    "ErrorChunk",
    "Finish",
    "FinishReason",
    "FinishStep",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "ResetStep",
    "SourceUrl",
    "Start",
    "StartStep",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolApprovalRequest",
    "ToolAuthorizationRequest",
    "ToolCancelled",
    "ToolInputAvailable",
    "ToolInputDelta",
    "ToolInputStart",
    "ToolNotExecuted",
    "ToolOutputAvailable",
    "ToolOutputDenied",
    "ToolOutputError",
    "ToolResultChunk",
    "ToolSettled",
    "Usage",
    "cancelled_text",
    "not_executed_output",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Start:
    type: ClassVar[Literal["start"]] = "start"
    message_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StartStep:
    type: ClassVar[Literal["start-step"]] = "start-step"
    step_number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TextStart:
    type: ClassVar[Literal["text-start"]] = "text-start"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    type: ClassVar[Literal["text-delta"]] = "text-delta"
    id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextEnd:
    type: ClassVar[Literal["text-end"]] = "text-end"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningStart:
    type: ClassVar[Literal["reasoning-start"]] = "reasoning-start"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta:
    type: ClassVar[Literal["reasoning-delta"]] = "reasoning-delta"
    id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningEnd:
    type: ClassVar[Literal["reasoning-end"]] = "reasoning-end"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputStart:
    type: ClassVar[Literal["tool-input-start"]] = "tool-input-start"
    tool_call_id: str
    tool_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputDelta:
    type: ClassVar[Literal["tool-input-delta"]] = "tool-input-delta"
    tool_call_id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputAvailable:
    """The complete input of a tool call (parsed JSON, or the raw text when it did not parse)."""

    type: ClassVar[Literal["tool-input-available"]] = "tool-input-available"
    tool_call_id: str
    tool_name: str
    input: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputAvailable:
    type: ClassVar[Literal["tool-output-available"]] = "tool-output-available"
    tool_call_id: str
    output: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputError:
    """The tool's input was invalid or its body raised; the model sees ``error_text``."""

    type: ClassVar[Literal["tool-output-error"]] = "tool-output-error"
    tool_call_id: str
    error_text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolNotExecuted:
    """The tool gate refused the call: nothing of the tool ran."""

    type: ClassVar[Literal["tool-not-executed"]] = "tool-not-executed"
    tool_call_id: str
    tool_name: str
    reason: Literal["tool_inactive", "tool_unavailable"]


_NOT_EXECUTED_TEXT = {
    "tool_inactive": 'The tool "{name}" is switched off in this conversation, so it was not run.',
    "tool_unavailable": 'There is no tool named "{name}", so nothing was run.',
}


def not_executed_output(tool_name: str, reason: str) -> dict[str, Any]:
    """The tool output a chat UI shows for a call the tool gate refused (live and reloaded)."""
    text = _NOT_EXECUTED_TEXT.get(reason, "The tool {name} was not run.")
    return {"notExecuted": True, "reason": reason, "message": text.format(name=tool_name)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApprovalRequest:
    type: ClassVar[Literal["tool-approval-request"]] = "tool-approval-request"
    approval_id: str
    tool_call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAuthorizationRequest:
    """The call waits for the user to sign in to ``strategy`` (its turn pauses): ``url`` is
    where they sign in. The UI stream carries it as a ``data-authorization`` part
    (``{toolCallId, strategy, url}``; docs/ui-message-stream.md). The URL holds a signed
    one-time state and a PKCE challenge, nothing secret."""

    type: ClassVar[Literal["tool-authorization-request"]] = "tool-authorization-request"
    tool_call_id: str
    strategy: str
    url: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputDenied:
    type: ClassVar[Literal["tool-output-denied"]] = "tool-output-denied"
    tool_call_id: str
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCancelled:
    """The call waited for an approval or a client's answer, and none came before a new user
    message moved the conversation on: nothing of the tool ran, and the model was told so."""

    type: ClassVar[Literal["tool-cancelled"]] = "tool-cancelled"
    tool_call_id: str
    reason: Literal["new_message"] = "new_message"


_CANCELLED_TEXT = {"new_message": "a new message was sent"}


def cancelled_text(reason: str) -> str:
    """The text a chat UI shows for a cancelled call (live and reloaded): the engine's own
    words, so it is never masked."""
    return f"cancelled: {_CANCELLED_TEXT.get(reason, reason)}"


# How a tool call ends, as a chunk.
ToolResultChunk = (
    ToolOutputAvailable | ToolOutputError | ToolOutputDenied | ToolNotExecuted | ToolCancelled
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSettled:
    """A call of an *earlier* assistant message got its result as this turn began (a new user
    message came while the call waited): ``result`` belongs to that message, not to this
    turn's answer. A chat UI applies it to the earlier message's tool part (the UI stream sends
    it as a transient ``data-tool-settled`` part), which is where a reload shows it.

    Attributes:
        message_id: The UI message id of the earlier assistant message.
        tool_name: The call's tool.
        result: How the call ended.
    """

    type: ClassVar[Literal["tool-settled"]] = "tool-settled"
    message_id: str
    tool_name: str
    result: ToolResultChunk

    @property
    def tool_call_id(self) -> str:
        return self.result.tool_call_id


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextRowChunk:
    """A context row was committed (for servers, audit and telemetry; never for users)."""

    type: ClassVar[Literal["context-row"]] = "context-row"
    row: Any  # helix_stream.context.ContextRow (Any here to keep this module dependency-free)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSkipped:
    """A context source was skipped (hook raised, timed out, returned junk; memory too large)."""

    type: ClassVar[Literal["context_skipped"]] = "context_skipped"
    reason: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishStep:
    """A step ended; ``step`` is its full result (tool calls, results, messages)."""

    type: ClassVar[Literal["finish-step"]] = "finish-step"
    step_number: int
    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    response_model: str | None = None
    step: StepResult | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetStep:
    """The step's model call failed after it had streamed and the step is redone
    (``stream_retries``): drop what the step showed since its ``StartStep``; the step's
    chunks come again. The UI stream sends the AI SDK 7's ``reset-step``.

    Example::

        shown: list[str] = []
        async for chunk in hs.stream_text(model=..., prompt="Hi", stream_retries=1):
            if isinstance(chunk, ResetStep):
                shown.clear()  # the failed attempt's text goes
            elif isinstance(chunk, TextDelta):
                shown.append(chunk.delta)
    """

    type: ClassVar[Literal["reset-step"]] = "reset-step"
    step_number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    """The run ended; ``usage`` is the total, ``output`` the finish tool's value (if any)."""

    type: ClassVar[Literal["finish"]] = "finish"
    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    output: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorChunk:
    """The run failed; ``error`` is the exception (transformers mask its text by default)."""

    type: ClassVar[Literal["error"]] = "error"
    error: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class Abort:
    """The run was stopped on purpose (a user's Stop) before it finished; ``reason`` says why.

    The last chunk of a stopped run: what it had streamed is kept (stored as interrupted), no
    ``Finish`` follows. The UI stream ends its open parts and sends the AI SDK's ``abort``.
    """

    type: ClassVar[Literal["abort"]] = "abort"
    reason: str | None = None


Chunk = (
    Start
    | StartStep
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolInputStart
    | ToolInputDelta
    | ToolInputAvailable
    | ToolOutputAvailable
    | ToolOutputError
    | ToolNotExecuted
    | ToolApprovalRequest
    | ToolAuthorizationRequest
    | ToolOutputDenied
    | ToolCancelled
    | ToolSettled
    | SourceUrl
    | ContextRowChunk
    | ContextSkipped
    | FinishStep
    | ResetStep
    | Finish
    | ErrorChunk
    | Abort
    | DataChunk
)
