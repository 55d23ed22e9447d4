"""The OpenTelemetry recorder: the loop's lifecycle as GenAI semantic-convention spans.

One call gives one tree (OpenTelemetry GenAI semantic conventions, "gen-ai-spans" and
"gen-ai-agent-spans")::

    stream_text | generate_text | invoke_agent {name}     the whole call (INTERNAL)
    ├── chat {model}                                       one per step's model call
    ├── execute_tool {tool}                                one per executed tool call
    └── chat {model}                                       ...

This module owns the call and chat spans' lifecycle (when each opens, ends, fails) and the
metrics' moments. What they open and close with is :mod:`._span_attributes`; the tool spans are
:mod:`._tool_spans`; how an exception is recorded is :mod:`._span_errors`.

Tool spans are children of the call span, not of the step's ``chat`` span: the model call
has ended when its tools run. Children get their parent explicitly, never through the
ambient context, because the loop is an async generator and a context attached there would
leak across its ``yield``. Only a tool span is made current, inside the tool's own task, so
that spans the tool's code creates nest under it.

Nothing here logs. Context values reach spans only through :mod:`._filters`. Recorded
content (messages, tool arguments and results, row contents) and exception text are
redacted of every string the filters keep out, and of the call's credentials
(:mod:`._call_secrets`): a tool that echoes its ``api_key`` into an error must not carry it
into a span that way either.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context, trace
from opentelemetry.trace import Span, SpanKind

from ._call_secrets import CallSecrets
from ._figures import (
    step_figures,
    step_time_attributes,
    time_to_first_chunk_attributes,
)
from ._filters import (
    AttributeValue,
    output_messages,
    row_attributes,
    row_contents,
    semconv_finish_reason,
)
from ._metrics import call_meter, error_type as _error_type, meters_nothing
from ._recorder import Recorder
from ._semconv import provider_name, response_attributes, split_system, usage_attributes
from ._settings import TelemetrySettings
from ._span_attributes import (
    call_end_attributes,
    call_span_start,
    chat_request,
    common_attributes,
    skipped_events,
)
from ._span_errors import record_error
from ._tool_spans import ToolSpans

__all__ = ["OtelRecorder", "provider_name", "records_nothing"]

_SCOPE = "helix_stream"
# The semconv version these spans follow (the GenAI conventions are "Development" status).
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"


def records_nothing(settings: TelemetrySettings) -> bool:
    """True when neither a tracer provider nor a meter provider is configured (the global
    ones are OpenTelemetry's no-ops).

    The call then gets the no-op recorder, instead of building attributes for spans and
    measurements that go nowhere. Checked per call: a provider set globally later is used
    from then on.
    """
    return _traces_nothing(settings) and meters_nothing(settings.meter_provider)


def _traces_nothing(settings: TelemetrySettings) -> bool:
    if settings.tracer_provider is not None:
        return False
    provider = trace.get_tracer_provider()
    return isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


class OtelRecorder(Recorder):
    """Records one call as GenAI spans and metrics (built by
    :func:`~helix_stream.telemetry.recorder_for`)."""

    def __init__(
        self,
        settings: TelemetrySettings,
        *,
        operation: str,
        tools: Mapping[str, Any],
        runtime_context: Mapping[str, Any],
        tools_context: Mapping[str, Any],
        agent_name: str | None = None,
        conversation_id: str | None = None,
    ) -> None:
        provider = settings.tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer(_SCOPE, schema_url=_SCHEMA_URL)
        self._meter = call_meter(settings.meter_provider)
        self._settings = settings
        self._operation = operation
        self._agent_name = agent_name or settings.function_id or "agent"
        self._secrets = CallSecrets(
            settings, runtime_context=runtime_context, tools_context=tools_context
        )
        self._common = common = common_attributes(settings, conversation_id)
        self._call: Span | None = None
        self._parent: otel_context.Context | None = None
        self._step: Span | None = None
        # The chat span whose model call ended, with that end (ns): it ends when its step
        # does, so that it can carry the step's own ``helix.step_time`` (tools included).
        self._held: tuple[Span, int] | None = None
        self._step_number = 0
        self._failed_attempts = 0
        self._ended = False
        self._tool_spans = ToolSpans(
            self._tracer, settings, tools=tools, common=common, secrets=self._secrets
        )

    # -- the call -------------------------------------------------------------------------

    def call_started(
        self,
        *,
        model: str,
        runtime_context: Mapping[str, Any],
        messages: Sequence[Any],
        system: str | None = None,
    ) -> None:
        provider, request_model = provider_name(model)
        name, own = call_span_start(self._operation, self._agent_name, provider, request_model)
        attrs: dict[str, AttributeValue] = {**self._common, **own}
        self._secrets.set_runtime(runtime_context)
        attrs.update(self._secrets.runtime_attributes())
        # No explicit parent: the span current where the run is iterated (a request span).
        span = self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attrs)
        # Content is built only for a span that records (not for one sampled out).
        if self._settings.record_inputs and span.is_recording():
            span.set_attributes(self._secrets.input_content(messages, system))
        self._call = span
        self._meter.call_started(provider, request_model)
        self._parent = trace.set_span_in_context(span)

    def call_finished(
        self, *, steps: Sequence[Any], finish_reason: str, usage: Any, text: str
    ) -> None:
        if self._ended:
            return
        self._ended = True
        self._end_step()
        span = self._call
        if span is None:
            return
        reason = semconv_finish_reason(finish_reason)
        attrs, last_model = call_end_attributes(steps, reason, usage)
        if self._settings.record_outputs and span.is_recording():
            attrs["gen_ai.output.messages"] = self._secrets.content(
                output_messages(text, [], reason)
            )
        span.set_attributes(attrs)
        span.end()
        self._meter.call_finished(last_model)

    def call_failed(self, error: BaseException) -> None:
        if self._ended:
            return
        self._ended = True
        self._meter.failed(error)
        if self._step is not None and self._failed_attempts:
            self._step.set_attribute("helix.attempts", self._failed_attempts)
        self._release()
        spans = [s for s in (self._step, self._call) if s is not None]
        self._step = None
        for span in spans:
            record_error(span, error, self._secrets.secret_set())
            span.end()

    # -- steps ----------------------------------------------------------------------------

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
        self._end_step()
        self._step_number = step_number
        self._failed_attempts = 0
        self._secrets.set_runtime(runtime_context)
        self._secrets.remember_credentials(params)
        request = chat_request(model, params, step_number=step_number)
        attrs: dict[str, AttributeValue] = {**self._common, **request.attributes}
        attrs.update(self._secrets.runtime_attributes())
        attrs.update(row_attributes(context_rows))
        span = self._tracer.start_span(
            request.name, context=self._parent, kind=request.kind, attributes=attrs
        )
        if self._settings.record_inputs and span.is_recording():
            system, messages = split_system(params.get("messages") or [])
            content = self._secrets.input_content(messages, system)
            if context_rows:
                content["helix.context.contents"] = self._secrets.content(
                    row_contents(context_rows)
                )
            span.set_attributes(content)
        for event in skipped_events(skipped):
            span.add_event("context_skipped", event)
        self._step = span
        self._meter.step_started(request.metered)

    def attempt_failed(self, attempt: Any) -> None:
        if (span := self._step) is None:
            return
        self._failed_attempts += 1
        error = getattr(attempt, "error", None)
        delay = getattr(attempt, "delay", None)
        event: dict[str, AttributeValue] = {
            "helix.attempt": int(getattr(attempt, "number", self._failed_attempts)),
            "helix.attempt.will_retry": delay is not None,
            "helix.attempt.duration_s": round(float(getattr(attempt, "elapsed", 0.0)), 6),
            "helix.attempt.after_text": bool(getattr(attempt, "after_text", False)),
        }
        if delay is not None:
            event["helix.attempt.retry_delay_s"] = round(float(delay), 6)
        if isinstance(error, BaseException):
            event["error.type"] = _error_type(error)
            code = getattr(error, "code", None)
            if isinstance(code, str):
                event["helix.error.code"] = code
            event["exception.message"] = self._secrets.scrub(str(error))
        span.add_event("helix.attempt_failed", event)

    def first_chunk(self, elapsed: float) -> None:
        if self._step is not None:
            self._step.set_attributes(time_to_first_chunk_attributes(elapsed))
        self._meter.first_chunk(elapsed)

    def step_finished(self, *, step: Any, response: Any = None) -> None:
        span = self._step
        if span is None:
            return
        self._step = None
        reason = semconv_finish_reason(str(getattr(step, "finish_reason", "other")))
        usage = getattr(step, "usage", None)
        calls = list(getattr(step, "tool_calls", None) or ())
        attrs: dict[str, AttributeValue] = {
            "gen_ai.response.finish_reasons": [reason],
            **usage_attributes(usage),
            "helix.tool_calls": len(calls),
            "helix.attempts": self._failed_attempts + 1,
        }
        attrs.update(step_figures(step))
        response_model = getattr(step, "response_model", None)
        if response_model:
            attrs["gen_ai.response.model"] = str(response_model)
        # Who answered (a Router's deployment, a fallback): what the stream reported wins
        # over what the request named.
        answered = response_attributes(response)
        attrs.update(answered)
        if self._settings.record_outputs and span.is_recording():
            text = str(getattr(step, "text", ""))
            attrs["gen_ai.output.messages"] = self._secrets.content(
                output_messages(text, calls, reason)
            )
        span.set_attributes(attrs)
        self._release()
        self._held = (span, time.time_ns())
        if response_model:
            answered["gen_ai.response.model"] = str(response_model)
        self._meter.step_finished(usage, answered)

    def step_ended(self, *, performance: Any) -> None:
        held, self._held = self._held, None
        if held is not None:
            span, ended = held
            span.set_attributes(step_time_attributes(performance))
            span.end(end_time=ended)

    def _release(self) -> None:
        """End a held chat span without its step's time (its step did not end)."""
        held, self._held = self._held, None
        if held is not None:
            held[0].end(end_time=held[1])

    # -- tools (their spans are ToolSpans') -------------------------------------------------

    @contextmanager
    def tool_call(self, *, call: Any, tool_context: Any) -> Iterator[Any]:
        with self._tool_spans.tool_call(
            call=call, tool_context=tool_context, parent=self._parent, step_number=self._step_number
        ) as handle:
            yield handle

    def token_resolved(
        self, *, tool_call_id: str, strategy: str, source: str, secrets: set[str]
    ) -> None:
        self._tool_spans.token_resolved(
            tool_call_id=tool_call_id, strategy=strategy, source=source, secrets=secrets
        )

    def sign_in_required(self, handle: Any, *, strategy: str) -> None:
        self._tool_spans.sign_in_required(handle, strategy=strategy)

    def tool_finished(
        self, handle: Any, *, result: Any, error: BaseException | None = None
    ) -> None:
        self._tool_spans.tool_finished(handle, result=result, error=error)

    def _end_step(self) -> None:
        self._release()
        if self._step is not None:
            self._step.end()
            self._step = None

    def request_sent(self, params: Mapping[str, Any]) -> None:
        self._secrets.remember_credentials(params)
