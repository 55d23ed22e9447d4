"""Lifecycle callbacks: ``on_start``, ``on_step_start``, ``on_model_call_start``/``_end``,
``on_tool_call_start``/``_end``, ``on_step_end``, ``on_end`` and ``on_abort``.

Each callback is sync or async and receives one event, a frozen dataclass: the public form of
the run's event (:mod:`helix_stream._event_stream`), whose subscribers the callbacks are
(:class:`LifecycleSubscriber`, :class:`AliasSubscriber`). A callback that
raises is logged (``helix_stream.loop``, with the session id) and never breaks the run: a
callback observes a run, it does not steer it (``prepare_step``, stop conditions and hooks do).
``on_end`` and ``on_abort`` are exclusive: a run that is closed or cancelled (its client left,
``aclose()``, a task cancel) gets ``on_abort`` with the steps it finished, never ``on_end``.
A run that failed gets neither (``on_error`` has it).

``on_step_finish`` (called with the :class:`~helix_stream.StepResult`) is ``on_step_end``'s
older form and keeps working; so do ``on_chunk``, ``on_finish`` and ``on_error``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, assert_never

from .._event_stream import (
    EventStream,
    ModelCallEnded,
    ModelCallStarted,
    Policy,
    RunAborted,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStarted,
    SessionEvent,
    StepEnded,
    StepStarted,
    ToolCallEnded,
    ToolCallStarted,
)
from ..steps import ModelCallPerformance, StepPerformance, StepResult, ToolCall, ToolResult

__all__ = [
    "LIFECYCLE_NAMES",
    "AbortEvent",
    "AliasSubscriber",
    "EndEvent",
    "LifecycleSubscriber",
    "ModelCallEndEvent",
    "ModelCallStartEvent",
    "StartEvent",
    "StepEndEvent",
    "StepStartEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolOutcome",
    "ToolWatch",
    "outcome_of",
]

logger = logging.getLogger("helix_stream.loop")

ToolOutcome = Literal["success", "error", "not_executed", "timed_out", "pending"]

LIFECYCLE_NAMES = (
    "on_start",
    "on_step_start",
    "on_model_call_start",
    "on_model_call_end",
    "on_tool_call_start",
    "on_tool_call_end",
    "on_step_end",
    "on_end",
    "on_abort",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StartEvent:
    """The run starts. ``session_id`` is ``None`` outside a session.

    Example::

        def on_start(event: hs.StartEvent) -> None:
            print("run on", event.model, event.runtime_context.get("request_id"))

        result = hs.stream_text(model="helix/demo", prompt="Hi", on_start=on_start)
    """

    model: str
    session_id: str | None
    runtime_context: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStartEvent:
    """A step starts (before its ``prepare_step``).

    Example::

        def on_step_start(event: hs.StepStartEvent) -> None:
            print("step", event.step_number, "of session", event.session_id)

        result = hs.stream_text(model="helix/demo", prompt="Hi", on_step_start=on_step_start)
    """

    step_number: int
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStartEvent:
    """A step's model call is about to be sent.

    Example::

        def on_model_call_start(event: hs.ModelCallStartEvent) -> None:
            print("calling", event.model, "for step", event.step_number)

        result = hs.stream_text(model="helix/demo", prompt="Hi",

                                on_model_call_start=on_model_call_start)
    """

    step_number: int
    model: str
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallEndEvent:
    """A step's model call ended; ``error`` is set when it failed (a timeout included).

    Example::

        def on_model_call_end(event: hs.ModelCallEndEvent) -> None:
            p = event.performance
            print(event.model, p.time_to_first_chunk, p.output_tokens_per_second, event.error)

        result = hs.stream_text(model="helix/demo", prompt="Hi",

                                on_model_call_end=on_model_call_end)
    """

    step_number: int
    model: str
    session_id: str | None
    performance: ModelCallPerformance
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStartEvent:
    """A tool call starts running.

    Example::

        def on_tool_call_start(event: hs.ToolCallStartEvent) -> None:
            print("running", event.call.name, event.call.input)

        result = hs.stream_text(model="helix/demo", prompt="Hi",

                                on_tool_call_start=on_tool_call_start)
    """

    step_number: int
    call: ToolCall
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEndEvent:
    """A tool call ended.

    Attributes:
        duration: Seconds it ran (0 for a call that was not executed).
        outcome: ``"success"``, ``"error"``, ``"not_executed"`` (switched off, unknown or
            invalid input), ``"timed_out"``, or ``"pending"`` (it waits for an approval or
            the client).
        approved: The call ran on an approval.

    Example::

        def on_tool_call_end(event: hs.ToolCallEndEvent) -> None:
            print(event.call.name, event.outcome, f"{event.duration:.2f} s", event.result.status)

        result = hs.stream_text(model="helix/demo", prompt="Hi", on_tool_call_end=on_tool_call_end)
    """

    step_number: int
    call: ToolCall
    result: ToolResult
    session_id: str | None
    duration: float
    outcome: ToolOutcome
    approved: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class StepEndEvent:
    """A step ended; ``performance`` is ``step.performance``.

    Example::

        def on_step_end(event: hs.StepEndEvent) -> None:
            print(event.step.step_number, event.step.finish_reason, event.performance.step_time)

        result = hs.stream_text(model="helix/demo", prompt="Hi", on_step_end=on_step_end)
    """

    step: StepResult
    performance: StepPerformance
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EndEvent:
    """The run finished (its ``finish`` chunk); ``result`` is what ``generate_text`` returns.

    Example::

        def on_end(event: hs.EndEvent) -> None:
            print("done", event.session_id, event.result)

        result = hs.stream_text(model="helix/demo", prompt="Hi", on_end=on_end)
    """

    result: Any
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortEvent:
    """The run was closed or cancelled before its end; ``steps``: the steps it finished.

    Example::

        def on_abort(event: hs.AbortEvent) -> None:
            print("closed early after", len(event.steps), "steps")

        result = hs.stream_text(model="helix/demo", prompt="Hi", on_abort=on_abort)
    """

    steps: Sequence[StepResult]
    session_id: str | None


Callback = Callable[..., Any]

_LIFECYCLE_KINDS = {
    "on_start": "run-started",
    "on_step_start": "step-started",
    "on_model_call_start": "model-call-started",
    "on_model_call_end": "model-call-ended",
    "on_tool_call_start": "tool-call-started",
    "on_tool_call_end": "tool-call-ended",
    "on_step_end": "step-ended",
    "on_end": "run-finished",
    "on_abort": "run-aborted",
}


def _public_event(event: RunEvent) -> Any:
    """The lifecycle callback's event for a stream event (its public, documented form)."""
    sid = event.session_id
    match event:
        case RunStarted():
            return StartEvent(
                model=event.model, session_id=sid, runtime_context=event.runtime_context
            )
        case StepStarted():
            return StepStartEvent(step_number=event.step_number, session_id=sid)
        case ModelCallStarted():
            return ModelCallStartEvent(
                step_number=event.step_number, model=event.model, session_id=sid
            )
        case ModelCallEnded():
            return ModelCallEndEvent(
                step_number=event.step_number,
                model=event.model,
                session_id=sid,
                performance=event.performance,
                error=event.error,
            )
        case ToolCallStarted():
            return ToolCallStartEvent(
                step_number=event.step_number, call=event.call, session_id=sid
            )
        case ToolCallEnded():
            return ToolCallEndEvent(
                step_number=event.step_number,
                call=event.call,
                result=event.result,
                session_id=sid,
                duration=event.duration,
                outcome=event.outcome,
                approved=event.approved,
            )
        case StepEnded():
            return StepEndEvent(step=event.step, performance=event.performance, session_id=sid)
        case RunFinished():
            return EndEvent(result=event.result, session_id=sid)
        case RunAborted():
            return AbortEvent(steps=list(event.steps), session_id=sid)
        case RunFailed():
            return event.error
        case SessionEvent():  # no lifecycle callback subscribes to a session's events
            return event
        case _:
            assert_never(event)


@dataclass(frozen=True, slots=True)
class LifecycleSubscriber:
    """The lifecycle callbacks as a subscriber of the run's event stream: observe-only. A
    callback that raises is logged (with its name and the session id) and the run goes on."""

    by_kind: Mapping[str, tuple[str, Callback]]  # stream kind -> (callback name, callback)
    call: Callable[..., Awaitable[Any]]  # call_user, bound to the run's session
    policy: Policy = "observe"

    @classmethod
    def of(
        cls, callbacks: Mapping[str, Callback | None], call: Callable[..., Awaitable[Any]]
    ) -> LifecycleSubscriber:
        """The subscriber of the callbacks given (by name: ``on_start``, ...)."""
        by_kind = {
            _LIFECYCLE_KINDS[name]: (name, fn) for name, fn in callbacks.items() if fn is not None
        }
        return cls(by_kind, call)

    @property
    def kinds(self) -> frozenset[str]:
        return frozenset(self.by_kind)

    async def handle(self, event: RunEvent) -> None:
        name, fn = self.by_kind[event.kind]
        try:
            await self.call(fn, _public_event(event))
        except Exception:
            logger.exception(
                "session %r: the %s callback raised; the run goes on",
                event.session_id,
                name,
                extra={"event": "core.callback_failed", "session_id": event.session_id},
            )


@dataclass(frozen=True, slots=True)
class AliasSubscriber:
    """The older callbacks as a subscriber: ``on_step_finish`` (each, with the step),
    ``on_finish`` (the result) and ``on_error`` (the error). They keep their policy: an
    error of one fails the run."""

    on_step_finish: tuple[Callback, ...]
    on_finish: Callback | None
    on_error: Callback | None
    call: Callable[..., Awaitable[Any]]
    policy: Policy = "fail"

    @property
    def kinds(self) -> frozenset[str]:
        wanted = {"step-ended"} if self.on_step_finish else set()
        wanted |= {"run-finished"} if self.on_finish is not None else set()
        return frozenset(wanted | ({"run-failed"} if self.on_error is not None else set()))

    async def handle(self, event: RunEvent) -> None:
        if isinstance(event, StepEnded):
            for callback in self.on_step_finish:
                await self.call(callback, event.step)
        elif isinstance(event, RunFinished):
            await self.call(self.on_finish, event.result)
        elif isinstance(event, RunFailed):
            await self.call(self.on_error, event.error)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolWatch:
    """What a step's tool runner needs to report its calls to the run's event stream."""

    stream: EventStream
    step_number: int
    session_id: str | None

    async def start(self, call: ToolCall) -> None:
        if self.stream.wants("tool-call-started"):
            event = ToolCallStarted(
                step_number=self.step_number, call=call, session_id=self.session_id
            )
            await self.stream.emit(event)

    async def end(
        self, call: ToolCall, result: ToolResult, duration: float, outcome: ToolOutcome, **kw: Any
    ) -> None:
        if self.stream.wants("tool-call-ended"):
            event = ToolCallEnded(
                step_number=self.step_number,
                call=call,
                result=result,
                session_id=self.session_id,
                duration=duration,
                outcome=outcome,
                approved=bool(kw.get("approved")),
            )
            await self.stream.emit(event)


def outcome_of(result: ToolResult) -> ToolOutcome:
    """A result's outcome, for a call that did not time out."""
    status = result.status
    if status == "output":
        return "success"
    if status == "pending":
        return "pending"
    return "not_executed" if status in ("not_executed", "denied") else "error"
