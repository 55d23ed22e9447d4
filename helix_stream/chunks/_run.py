"""The chunks of a run's course: its start and end (finish, error, abort), its steps, the text
and reasoning parts of the answer, and the context rows it committed or skipped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from .._step_parts import FinishReason, Usage

if TYPE_CHECKING:
    from ..steps import StepResult


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
class SteeringMessage:
    """A user's message sent while the turn ran was delivered to it (docs/guides/serving.md,
    "Steering"): the model sees it from its next call on. ``parts`` are its UI parts as the
    user sent them (``text`` and ``file``); ``ai@7`` clients show it in place.

    Example::

        async for chunk in executor.run(agent, "chat-1", "Weather in Paris?"):
            if isinstance(chunk, SteeringMessage):
                print("the user added:", chunk.parts)
    """

    type: ClassVar[Literal["steering-message"]] = "steering-message"
    id: str
    parts: list[dict[str, Any]] = field(default_factory=list)


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
class ResetStep:
    """The step's model call failed after it had streamed and the step is redone
    (``stream_retries``): drop what the step showed since its ``StartStep``; the step's
    chunks come again. The UI stream sends the AI SDK 7's ``reset-step``.

    Example::

        shown: list[str] = []
        async for chunk in hs.stream_text(model="helix/demo", prompt="Hi", stream_retries=1):
            if isinstance(chunk, ResetStep):
                shown.clear()  # the failed attempt's text goes
            elif isinstance(chunk, TextDelta):
                shown.append(chunk.delta)
    """

    type: ClassVar[Literal["reset-step"]] = "reset-step"
    step_number: int


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
