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
    """A run's stream begins (``message_id``: the answer's id, when the run has one).

    Example::

        from helix_stream.chunks import Start

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, Start):
                message_id = chunk.message_id      # the answer's id, when known
    """

    type: ClassVar[Literal["start"]] = "start"
    message_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StartStep:
    """A step begins: one model call and the tool calls it asks for.

    Example::

        from helix_stream.chunks import StartStep

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, StartStep):
                print(f"step {chunk.step_number}")
    """

    type: ClassVar[Literal["start-step"]] = "start-step"
    step_number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TextStart:
    """A text part of the answer opens; its deltas carry the same ``id``.

    Example::

        from helix_stream.chunks import TextStart

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, TextStart):
                parts: dict[str, str] = {chunk.id: ""}   # a text part opens
    """

    type: ClassVar[Literal["text-start"]] = "text-start"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of the answer's text.

    Example::

        from helix_stream.chunks import TextDelta

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, TextDelta):
                print(chunk.delta, end="", flush=True)
    """

    type: ClassVar[Literal["text-delta"]] = "text-delta"
    id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TextEnd:
    """A text part is complete.

    Example::

        from helix_stream.chunks import TextEnd

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, TextEnd):
                print()                                  # text part chunk.id is complete
    """

    type: ClassVar[Literal["text-end"]] = "text-end"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningStart:
    """A reasoning part opens (a model that shows its thinking).

    Example::

        from helix_stream.chunks import ReasoningStart

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ReasoningStart):
                print("thinking…")
    """

    type: ClassVar[Literal["reasoning-start"]] = "reasoning-start"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta:
    """A piece of the model's reasoning.

    Example::

        from helix_stream.chunks import ReasoningDelta

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ReasoningDelta):
                thoughts = chunk.delta                   # the model's reasoning, streamed
    """

    type: ClassVar[Literal["reasoning-delta"]] = "reasoning-delta"
    id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningEnd:
    """A reasoning part is complete.

    Example::

        from helix_stream.chunks import ReasoningEnd

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ReasoningEnd):
                print("done thinking")
    """

    type: ClassVar[Literal["reasoning-end"]] = "reasoning-end"
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputStart:
    """The model begins a tool call: its id and the tool's name, before the arguments.

    Example::

        from helix_stream.chunks import ToolInputStart

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ToolInputStart):
                print(f"calling {chunk.tool_name} ({chunk.tool_call_id})")
    """

    type: ClassVar[Literal["tool-input-start"]] = "tool-input-start"
    tool_call_id: str
    tool_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputDelta:
    """A piece of a tool call's arguments, as JSON text.

    Example::

        from helix_stream.chunks import ToolInputDelta

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ToolInputDelta):
                arguments_so_far = chunk.delta          # JSON text, in pieces
    """

    type: ClassVar[Literal["tool-input-delta"]] = "tool-input-delta"
    tool_call_id: str
    delta: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolInputAvailable:
    """The complete input of a tool call (parsed JSON, or the raw text when it did not parse).

    Example::

        from helix_stream.chunks import ToolInputAvailable

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ToolInputAvailable):
                print(chunk.tool_name, chunk.input)      # the validated arguments
    """

    type: ClassVar[Literal["tool-input-available"]] = "tool-input-available"
    tool_call_id: str
    tool_name: str
    input: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputAvailable:
    """A tool call's result (what the model reads next).

    Example::

        from helix_stream.chunks import ToolOutputAvailable

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ToolOutputAvailable):
                print(chunk.tool_call_id, chunk.output)
    """

    type: ClassVar[Literal["tool-output-available"]] = "tool-output-available"
    tool_call_id: str
    output: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputError:
    """The tool's input was invalid or its body raised; the model sees ``error_text``.

    Example::

        from helix_stream.chunks import ToolOutputError

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ToolOutputError):
                print(chunk.tool_call_id, chunk.error_text)   # the model reads it and goes on
    """

    type: ClassVar[Literal["tool-output-error"]] = "tool-output-error"
    tool_call_id: str
    error_text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolNotExecuted:
    """The tool gate refused the call: nothing of the tool ran.

    Example::

        from helix_stream.chunks import ToolNotExecuted

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ToolNotExecuted):
                print(chunk.tool_name, chunk.reason)     # tool_inactive or tool_unavailable
    """

    type: ClassVar[Literal["tool-not-executed"]] = "tool-not-executed"
    tool_call_id: str
    tool_name: str
    reason: Literal["tool_inactive", "tool_unavailable"]


_NOT_EXECUTED_TEXT = {
    "tool_inactive": 'The tool "{name}" is switched off in this conversation, so it was not run.',
    "tool_unavailable": 'There is no tool named "{name}", so nothing was run.',
}


def not_executed_output(tool_name: str, reason: str) -> dict[str, Any]:
    """The tool output a chat UI shows for a call the tool gate refused (live and reloaded).

    Example::

        from helix_stream.chunks import not_executed_output

        output = not_executed_output("get_weather", "tool_inactive")
        assert output["notExecuted"] is True and output["reason"] == "tool_inactive"
    """
    text = _NOT_EXECUTED_TEXT.get(reason, "The tool {name} was not run.")
    return {"notExecuted": True, "reason": reason, "message": text.format(name=tool_name)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolApprovalRequest:
    """A call of a tool with ``needs_approval`` waits for the app's answer; the turn pauses.

    Example::

        from helix_stream.chunks import ToolApprovalRequest

        async for chunk in executor.run(agent, "session-1", "Delete the report"):
            if isinstance(chunk, ToolApprovalRequest):
                await executor.respond_to_approval("session-1", chunk.approval_id, approved=True)
    """

    type: ClassVar[Literal["tool-approval-request"]] = "tool-approval-request"
    approval_id: str
    tool_call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolAuthorizationRequest:
    """The call waits for the user to sign in to ``strategy`` (its turn pauses): ``url`` is
    where they sign in. The UI stream carries it as a ``data-authorization`` part
    (``{toolCallId, strategy, url}``; docs/ui-message-stream.md). The URL holds a signed
    one-time state and a PKCE challenge, nothing secret.

    Example::

        from helix_stream.chunks import ToolAuthorizationRequest

        async for chunk in executor.run(agent, "session-1", "What is on monday?"):
            if isinstance(chunk, ToolAuthorizationRequest):
                show_sign_in_link(chunk.url)          # chunk.strategy names the service
    """

    type: ClassVar[Literal["tool-authorization-request"]] = "tool-authorization-request"
    tool_call_id: str
    strategy: str
    url: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutputDenied:
    """A call whose approval was refused: the tool did not run, and the model is told so.

    Example::

        from helix_stream.chunks import ToolOutputDenied

        async for chunk in executor.run(agent, "session-1"):
            if isinstance(chunk, ToolOutputDenied):
                print(chunk.tool_call_id, chunk.reason)   # the approval was refused
    """

    type: ClassVar[Literal["tool-output-denied"]] = "tool-output-denied"
    tool_call_id: str
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCancelled:
    """The call waited for an approval or a client's answer, and none came before a new user
    message moved the conversation on: nothing of the tool ran, and the model was told so.

    Example::

        from helix_stream.chunks import ToolCancelled

        async for chunk in executor.run(agent, "session-1", "Never mind"):
            if isinstance(chunk, ToolCancelled):      # a call left waiting when a new message came
                print(chunk.tool_call_id, chunk.reason)   # new_message
    """

    type: ClassVar[Literal["tool-cancelled"]] = "tool-cancelled"
    tool_call_id: str
    reason: Literal["new_message"] = "new_message"


_CANCELLED_TEXT = {"new_message": "a new message was sent"}


def cancelled_text(reason: str) -> str:
    """The text a chat UI shows for a cancelled call (live and reloaded): the engine's own
    words, so it is never masked.

    Example::

        from helix_stream.chunks import cancelled_text

        assert cancelled_text("new_message").startswith("cancelled: ")
    """
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

    Example::

        from helix_stream.chunks import ToolSettled

        async for chunk in executor.run(agent, "session-1"):
            if isinstance(chunk, ToolSettled):        # a call of an earlier message got its result
                print(chunk.message_id, chunk.tool_name, chunk.result)
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
    """A context row was committed (for servers, audit and telemetry; never for users).

    Example::

        from helix_stream.chunks import ContextRowChunk

        async for chunk in executor.run(agent, "session-1", "Hi"):
            if isinstance(chunk, ContextRowChunk):    # a committed row; never sent to a chat UI
                print(chunk.row)
    """

    type: ClassVar[Literal["context-row"]] = "context-row"
    row: Any  # helix_stream.context.ContextRow (Any here to keep this module dependency-free)


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSkipped:
    """A context source was skipped (hook raised, timed out, returned junk; memory too large).

    Example::

        from helix_stream.chunks import ContextSkipped

        async for chunk in executor.run(agent, "session-1", "Hi"):
            if isinstance(chunk, ContextSkipped):     # e.g. the step_context hook timed out
                print(chunk.source, chunk.reason)
    """

    type: ClassVar[Literal["context_skipped"]] = "context_skipped"
    reason: str
    source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishStep:
    """A step ended; ``step`` is its full result (tool calls, results, messages).

    Example::

        from helix_stream.chunks import FinishStep

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, FinishStep):
                print(chunk.step_number, chunk.finish_reason, chunk.usage.output_tokens)
    """

    type: ClassVar[Literal["finish-step"]] = "finish-step"
    step_number: int
    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    response_model: str | None = None
    step: StepResult | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finish:
    """The run ended; ``usage`` is the total, ``output`` the finish tool's value (if any).

    Example::

        from helix_stream.chunks import Finish

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, Finish):
                print(chunk.finish_reason, chunk.usage.total_tokens)
    """

    type: ClassVar[Literal["finish"]] = "finish"
    finish_reason: FinishReason
    usage: Usage = field(default_factory=Usage)
    output: Any = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorChunk:
    """The run failed; ``error`` is the exception (transformers mask its text by default).

    Example::

        from helix_stream.chunks import ErrorChunk

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, ErrorChunk):
                print(type(chunk.error).__name__)       # the run ends after it
    """

    type: ClassVar[Literal["error"]] = "error"
    error: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class Abort:
    """The run was stopped on purpose (a user's Stop) before it finished; ``reason`` says why.

    The last chunk of a stopped run: what it had streamed is kept (stored as interrupted), no
    ``Finish`` follows. The UI stream ends its open parts and sends the AI SDK's ``abort``.

    Example::

        from helix_stream.chunks import Abort

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:
            if isinstance(chunk, Abort):
                print("stopped:", chunk.reason)
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
    | Finish
    | ErrorChunk
    | Abort
    | DataChunk
)
