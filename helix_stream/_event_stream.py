"""The run's event stream: each moment of a run, emitted once, as one typed, frozen event.

The loop emits the moments of a run here — it starts, a step starts, a model call starts and
ends, a tool call starts and ends, a step ends, the run finishes, fails or is aborted — and
every observer of a run is a *subscriber* of this one stream:

* telemetry (:class:`~helix_stream.telemetry.Recorder`, through ``recorder_subscriber``):
  the call, model-call and step spans, and the metrics;
* the lifecycle callbacks (``on_start`` ... ``on_abort``) and their older aliases
  (``on_step_finish``, ``on_finish``, ``on_error``; ``on_chunk`` gets the chunks themselves);
* in a session, the agent's ``define_hook`` handlers: a step's end is reported to them as
  ``message.completed``, ``action.result`` and ``step.completed`` (and, for the turn's last
  step, ``session.waiting`` or ``turn.completed``) once the step is durably recorded. The
  session emits its other durable events (``turn.started``, ``context.committed``, ...) on
  the same stream at its own writes, as :class:`SessionEvent`: one kind per hook event.

Each subscriber names the kinds it wants (the stream builds nothing for a kind nobody wants)
and declares its failure policy: ``"observe"`` (an error is logged with the session id and
the run goes on) or ``"fail"`` (an error fails the run — a hook, as the session model says;
an alias callback, as it always did). A subscriber that raises never keeps the event from
the subscribers after it; once all have seen it, the first ``"fail"`` error is raised.

This mirrors the AI SDK's typed run events, which its telemetry integration and its
callbacks both consume, and openai-agents' ``RunHooksBase``: one vocabulary, many listeners.
Chunks are not wrapped: ``on_chunk`` receives each chunk as the loop made it, and a run
without it does no per-chunk work here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from ._step_parts import Usage
from .steps import ModelCallPerformance, StepPerformance, StepResult, ToolCall, ToolResult

__all__ = [
    "EventKind",
    "EventStream",
    "ModelCallEnded",
    "ModelCallStarted",
    "Policy",
    "RunAborted",
    "RunEvent",
    "RunFailed",
    "RunFinished",
    "RunStarted",
    "SessionEvent",
    "SessionEventKind",
    "StepEnded",
    "StepStarted",
    "Subscriber",
    "ToolCallEnded",
    "ToolCallStarted",
]

logger = logging.getLogger("helix_stream.loop")

Policy = Literal["observe", "fail"]
# A session's durable events: the kinds of SessionEvent (the names define_hook subscribes to).
SessionEventKind = Literal[
    "session.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "step.started",
    "step.completed",
    "step.failed",
    "message.completed",
    "action.result",
    "context.committed",
    "context.skipped",
    "session.waiting",
    "session.failed",
    "session.completed",
]
EventKind = Literal[
    "run-started",
    "step-started",
    "model-call-started",
    "model-call-ended",
    "tool-call-started",
    "tool-call-ended",
    "step-ended",
    "run-finished",
    "run-failed",
    "run-aborted",
    SessionEventKind,
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted:
    """The run starts: its model, contexts and the conversation before the first step."""

    kind: Literal["run-started"] = "run-started"
    session_id: str | None
    model: str
    runtime_context: Mapping[str, Any]
    messages: Sequence[Any]
    system: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStarted:
    """A step starts (before its context commit and its ``prepare_step``)."""

    kind: Literal["step-started"] = "step-started"
    session_id: str | None
    step_number: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStarted:
    """A step's model call is about to be sent, with what it sends (``params``) and the
    context rows committed for it (and those skipped)."""

    kind: Literal["model-call-started"] = "model-call-started"
    session_id: str | None
    step_number: int
    model: str
    params: Mapping[str, Any]
    runtime_context: Mapping[str, Any]
    context_rows: Sequence[Any] = ()
    skipped: Sequence[Any] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallEnded:
    """A model call ended. On success ``step`` is the step so far (no tool results yet) and
    ``response`` who answered; on failure ``error`` is set and ``step`` is ``None``. An
    attempt that failed after text and is retried (``stream_retries``) ends with its
    ``error``, its ``usage`` and ``retried=True``."""

    kind: Literal["model-call-ended"] = "model-call-ended"
    session_id: str | None
    step_number: int
    model: str
    performance: ModelCallPerformance
    error: BaseException | None = None
    step: StepResult | None = None
    response: Any = None
    usage: Usage | None = None
    retried: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    """A tool call starts running."""

    kind: Literal["tool-call-started"] = "tool-call-started"
    session_id: str | None
    step_number: int
    call: ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEnded:
    """A tool call ended (see :class:`~helix_stream.ToolCallEndEvent` for the fields)."""

    kind: Literal["tool-call-ended"] = "tool-call-ended"
    session_id: str | None
    step_number: int
    call: ToolCall
    result: ToolResult
    duration: float
    outcome: Literal["success", "error", "not_executed", "timed_out", "pending"]
    approved: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class StepEnded:
    """A step ended and is recorded (in a session: durably). ``final``: the run stops after
    it (the turn's last step: it ends or pauses the turn)."""

    kind: Literal["step-ended"] = "step-ended"
    session_id: str | None
    step: StepResult
    performance: StepPerformance
    final: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished:
    """The run finished (its ``finish`` chunk): ``result`` is what ``generate_text`` returns."""

    kind: Literal["run-finished"] = "run-finished"
    session_id: str | None
    result: Any
    finish_reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFailed:
    """The run ended with ``error`` (its ``error`` chunk)."""

    kind: Literal["run-failed"] = "run-failed"
    session_id: str | None
    error: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class RunAborted:
    """The run was closed or cancelled before its end; ``steps``: those it finished."""

    kind: Literal["run-aborted"] = "run-aborted"
    session_id: str | None
    steps: Sequence[StepResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEvent:
    """One of a session's durable events, emitted once its store write has committed.

    Attributes:
        kind: The event (``"turn.started"``, ``"context.committed"``, ...).
        session_id: The session.
        data: What the event says (the ``data`` a hook handler's event carries).
        site: Where in the turn it happened, the same when a retried or recovered turn
            repeats it: its turn, the checkpoint its step (or the turn's part) started from,
            its kind and how many of that kind came before it there.
    """

    kind: SessionEventKind
    session_id: str
    data: Mapping[str, Any]
    site: str


RunEvent: TypeAlias = (
    RunStarted
    | StepStarted
    | ModelCallStarted
    | ModelCallEnded
    | ToolCallStarted
    | ToolCallEnded
    | StepEnded
    | RunFinished
    | RunFailed
    | RunAborted
    | SessionEvent
)


class Subscriber(Protocol):
    """One observer of the stream: the kinds it wants, its failure policy, its handler."""

    @property
    def kinds(self) -> frozenset[str]: ...

    @property
    def policy(self) -> Policy: ...

    async def handle(self, event: RunEvent) -> None: ...


@dataclass(frozen=True, slots=True)
class FunctionSubscriber:
    """A subscriber made of a function (what a session gives for its hooks, and tests)."""

    kinds: frozenset[str]
    policy: Policy
    fn: Callable[[RunEvent], Awaitable[None]]

    async def handle(self, event: RunEvent) -> None:
        await self.fn(event)


@dataclass(slots=True)
class EventStream:
    """The one dispatcher of a run's events (see the module docstring).

    Args:
        subscribers: In the order they see each event.
        on_chunk: The ``on_chunk`` callback, if any (``await stream.chunk(c)`` calls it).
        session_id: The run's session (for the log of an observer's error).
    """

    subscribers: Sequence[Subscriber] = ()
    on_chunk: Callable[[Any], Awaitable[Any]] | None = None
    session_id: str | None = None
    _by_kind: dict[str, list[Subscriber]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for subscriber in self.subscribers:
            for kind in subscriber.kinds:
                self._by_kind.setdefault(kind, []).append(subscriber)

    def wants(self, kind: EventKind) -> bool:
        """Whether any subscriber wants ``kind`` (build the event only then)."""
        return kind in self._by_kind

    async def emit(self, event: RunEvent) -> None:
        """Deliver ``event`` to each subscriber that wants it, once, in order; then raise the
        first error of a ``"fail"`` subscriber (the ``"observe"`` ones are logged)."""
        failure: BaseException | None = None
        for subscriber in self._by_kind.get(event.kind, ()):
            try:
                await subscriber.handle(event)
            except Exception as exc:
                if subscriber.policy == "fail" and failure is None:
                    failure = exc
                    continue
                logger.error(
                    "session %r: a subscriber of %s raised; the run goes on",
                    self.session_id,
                    event.kind,
                    exc_info=exc,
                    extra={"event": "core.callback_failed", "session_id": self.session_id},
                )
        if failure is not None:
            raise failure

    async def chunk(self, chunk: Any) -> None:
        """Deliver a chunk to ``on_chunk`` (an error fails the run, as it always did)."""
        if self.on_chunk is not None:
            await self.on_chunk(chunk)
