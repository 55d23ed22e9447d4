"""The recorder interface telemetry implements; the no-op default costs nothing.

A recorder is a subscriber of the run's event stream (:mod:`helix_stream._event_stream`, through
:func:`recorder_subscriber`): the run's start, each model call's start and end, each step's end,
and the run's end, failure or abort start and end its spans — the chunk stream alone cannot say
when a model call ends and its tools begin. The moments only telemetry observes, inside a span's
own context (the request as sent, a failed attempt, the first chunk, a tool's span around its body,
a token resolved, a sign-in asked for), stay direct calls at their place.
:mod:`._otel` implements them on OpenTelemetry; the loop never depends on OpenTelemetry itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .._event_stream import (
    ModelCallEnded,
    ModelCallStarted,
    Policy,
    RunAborted,
    RunEvent,
    RunFailed,
    RunFinished,
    RunStarted,
    StepEnded,
)

__all__ = [
    "NOOP_RECORDER",
    "TOOL_SPAN",
    "Recorder",
    "RecorderSubscriber",
    "annotate_tool_call",
    "recorder_subscriber",
]

# The span of the tool call running in this task (set by the OpenTelemetry recorder inside the
# tool's own task), so that code a tool calls can describe the call on it.
TOOL_SPAN: ContextVar[Any] = ContextVar("helix_tool_span", default=None)


def annotate_tool_call(attributes: Mapping[str, Any]) -> None:
    """Add attributes to the ``execute_tool`` span of the tool call running now.

    Nothing happens outside a tool call, or when the call records no span. An MCP tool uses
    it for the ``mcp.*`` attributes (OpenTelemetry semconv: MCP instrumentation that finds a
    tool-execution span already open adds its attributes there instead of a span of its own).
    Only what the caller passes is recorded: it must hold no secret.

    Example::

        @hs.tool(description="Look up an order.")
        def lookup_order(order_id: str) -> str:
            annotate_tool_call({"app.order.region": "eu"})   # on this call's execute_tool span
            return order_id
    """
    span = TOOL_SPAN.get()
    if span is not None and span.is_recording():
        span.set_attributes(dict(attributes))


class Recorder:
    """Receives the loop's lifecycle; every method is a no-op here.

    Example::

        from helix_stream.telemetry import TelemetrySettings

        recorder: Recorder = recorder_for(TelemetrySettings(enabled=False), operation="stream_text")
        recorder.call_started(model="helix/demo", runtime_context={}, messages=[])   # a no-op
    """

    def call_started(
        self,
        *,
        model: str,
        runtime_context: Mapping[str, Any],
        messages: Sequence[Any],
        system: str | None = None,
    ) -> None:
        """The whole call (``stream_text``/``generate_text``/an agent turn) starts.

        ``messages`` are the conversation without the system prompt; ``system`` is the system
        prompt (recorded as ``gen_ai.system_instructions``)."""

    def step_started(
        self,
        *,
        step_number: int,
        model: str,
        params: Mapping[str, Any],
        runtime_context: Mapping[str, Any],
        context_rows: Sequence[Any],
        skipped: Sequence[Any],
    ) -> None:
        """A model call is about to be made (``context_rows`` were committed for it)."""

    def request_sent(self, params: Mapping[str, Any]) -> None:
        """The params the model call was made with, after model middleware (credentials that
        middleware added must be redacted too)."""

    def attempt_failed(self, attempt: Any) -> None:
        """One attempt of the step's model call failed (an ``Attempt``: number, error, the
        delay before the next one or ``None``). Pass it as ``open_stream``'s ``on_attempt``."""

    def first_chunk(self, elapsed: float) -> None:
        """The model call's first content-bearing chunk arrived, ``elapsed`` seconds after the
        call's stream was opened for reading (the figure ``ModelCallPerformance`` keeps as
        ``time_to_first_chunk``)."""

    def step_finished(self, *, step: Any, response: Any = None) -> None:
        """The model call of ``step`` (a StepResult, tool results not yet in) finished;
        ``response`` (the parser's ``ResponseInfo``) says who answered: response id, provider,
        deployment, server."""

    def step_ended(self, *, performance: Any) -> None:
        """The step ended, its tools included: ``performance`` is its ``StepPerformance``
        (``step_time`` on the step's span)."""

    @contextmanager
    def tool_call(self, *, call: Any, tool_context: Any) -> Iterator[Any]:
        """Wraps one tool's execution (``call`` is a ToolCall); yields a handle for
        :meth:`tool_finished`."""
        yield None

    def tool_finished(
        self, handle: Any, *, result: Any, error: BaseException | None = None
    ) -> None:
        """The tool call ended with ``result`` (a ToolResult); ``error`` is what its body raised."""

    def token_resolved(
        self, *, tool_call_id: str, strategy: str, source: str, secrets: set[str]
    ) -> None:
        """A tool call got its token for auth strategy ``strategy`` from ``source``
        (``"step"``: another call of the step resolved it, ``"store"``, ``"refresh"``,
        ``"strategy"``). ``secrets`` (the token's strings) are for redaction only: what the
        call's span shows must not contain them."""

    def sign_in_required(self, handle: Any, *, strategy: str) -> None:
        """The tool call (``handle`` from :meth:`tool_call`) parked until the user signs in
        to auth strategy ``strategy``; :meth:`tool_finished` follows with a pending result."""

    def call_finished(
        self, *, steps: Sequence[Any], finish_reason: str, usage: Any, text: str
    ) -> None:
        """The call ended normally."""

    def call_failed(self, error: BaseException) -> None:
        """The call ended with an error (also used for cancellation)."""


NOOP_RECORDER = Recorder()


_RECORDED = frozenset(
    {"run-started", "model-call-started", "model-call-ended", "run-finished", "run-failed"}
    | {"run-aborted", "step-ended"}
)


@dataclass(frozen=True, slots=True)
class RecorderSubscriber:
    """A recorder as a subscriber of the run's event stream. Observe-only: telemetry that
    fails is logged and never fails the run."""

    recorder: Recorder
    kinds: frozenset[str] = _RECORDED
    policy: Policy = "observe"

    async def handle(self, event: RunEvent) -> None:
        recorder = self.recorder
        if isinstance(event, RunStarted):
            recorder.call_started(
                model=event.model,
                runtime_context=event.runtime_context,
                messages=event.messages,
                system=event.system,
            )
        elif isinstance(event, ModelCallStarted):
            recorder.step_started(
                step_number=event.step_number,
                model=event.model,
                params=event.params,
                runtime_context=event.runtime_context,
                context_rows=event.context_rows,
                skipped=event.skipped,
            )
        elif isinstance(event, ModelCallEnded):
            if event.step is not None:  # a failed call ends with the run (run-failed)
                recorder.step_finished(step=event.step, response=event.response)
        elif isinstance(event, StepEnded):
            recorder.step_ended(performance=event.performance)
        elif isinstance(event, RunFinished):
            result = event.result
            recorder.call_finished(
                steps=result.steps,
                finish_reason=event.finish_reason,
                usage=result.usage,
                text=result.text,
            )
        elif isinstance(event, RunFailed):
            recorder.call_failed(event.error)
        elif isinstance(event, RunAborted):
            recorder.call_failed(asyncio.CancelledError("the run was cancelled"))


def recorder_subscriber(recorder: Recorder) -> RecorderSubscriber | None:
    """``recorder`` as a subscriber; ``None`` for the no-op recorder (nothing to build)."""
    return None if recorder is NOOP_RECORDER else RecorderSubscriber(recorder)
