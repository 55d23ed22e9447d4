"""Lifecycle callbacks: ``on_start``, ``on_step_start``, ``on_model_call_start``/``_end``,
``on_tool_call_start``/``_end``, ``on_step_end``, ``on_end`` and ``on_abort``.

Each callback is sync or async and receives one event, a frozen dataclass. A callback that
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..steps import ModelCallPerformance, StepPerformance, StepResult, ToolCall, ToolResult

__all__ = [
    "LIFECYCLE_NAMES",
    "AbortEvent",
    "EndEvent",
    "Lifecycle",
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
    """The run starts. ``session_id`` is ``None`` outside a session."""

    model: str
    session_id: str | None
    runtime_context: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStartEvent:
    """A step starts (before its ``prepare_step``)."""

    step_number: int
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStartEvent:
    """A step's model call is about to be sent."""

    step_number: int
    model: str
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallEndEvent:
    """A step's model call ended; ``error`` is set when it failed (a timeout included)."""

    step_number: int
    model: str
    session_id: str | None
    performance: ModelCallPerformance
    error: BaseException | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStartEvent:
    """A tool call starts running."""

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
    """A step ended; ``performance`` is ``step.performance``."""

    step: StepResult
    performance: StepPerformance
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EndEvent:
    """The run finished (its ``finish`` chunk); ``result`` is what ``generate_text`` returns."""

    result: Any
    session_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortEvent:
    """The run was closed or cancelled before its end; ``steps``: the steps it finished."""

    steps: Sequence[StepResult]
    session_id: str | None


Callback = Callable[..., Any]


class Lifecycle:
    """A run's lifecycle callbacks, and the one place they are called."""

    __slots__ = ("_call", "callbacks")

    def __init__(self, callbacks: Mapping[str, Callback | None], call: Callable[..., Any]) -> None:
        self.callbacks = {k: v for k, v in callbacks.items() if v is not None}
        self._call = call  # call_user, bound to the run's session

    def wants(self, name: str) -> bool:
        return name in self.callbacks

    async def emit(self, name: str, event: Any, session_id: str | None = None) -> None:
        """Call callback ``name`` with ``event``; a raising callback is logged, not raised."""
        fn = self.callbacks.get(name)
        if fn is None:
            return
        try:
            await self._call(fn, event)
        except Exception:
            logger.exception(
                "session %r: the %s callback raised; the run goes on",
                session_id,
                name,
                extra={"event": "core.callback_failed", "session_id": session_id},
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolWatch:
    """What a step's tool runner needs to report its calls (``on_tool_call_start``/``_end``)."""

    lifecycle: Lifecycle
    step_number: int
    session_id: str | None

    async def start(self, call: ToolCall) -> None:
        event = ToolCallStartEvent(
            step_number=self.step_number, call=call, session_id=self.session_id
        )
        await self.lifecycle.emit("on_tool_call_start", event, self.session_id)

    async def end(
        self, call: ToolCall, result: ToolResult, duration: float, outcome: ToolOutcome, **kw: Any
    ) -> None:
        event = ToolCallEndEvent(
            step_number=self.step_number,
            call=call,
            result=result,
            session_id=self.session_id,
            duration=duration,
            outcome=outcome,
            approved=bool(kw.get("approved")),
        )
        await self.lifecycle.emit("on_tool_call_end", event, self.session_id)


def outcome_of(result: ToolResult) -> ToolOutcome:
    """A result's outcome, for a call that did not time out."""
    status = result.status
    if status == "output":
        return "success"
    if status == "pending":
        return "pending"
    return "not_executed" if status in ("not_executed", "denied") else "error"
