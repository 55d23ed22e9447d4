"""The OpenTelemetry recorder: the loop's lifecycle as GenAI semantic-convention spans.

One call gives one tree (OpenTelemetry GenAI semantic conventions, "gen-ai-spans" and
"gen-ai-agent-spans")::

    stream_text | generate_text | invoke_agent {name}     the whole call (INTERNAL)
    ├── chat {model}                                       one per step's model call
    ├── execute_tool {tool}                                one per executed tool call
    └── chat {model}                                       ...

Tool spans are children of the call span, not of the step's ``chat`` span: the model call
has ended when its tools run. Children get their parent explicitly, never through the
ambient context, because the loop is an async generator and a context attached there would
leak across its ``yield``. Only a tool span is made current, inside the tool's own task, so
that spans the tool's code creates nest under it.

Nothing here logs. Context values reach spans only through :mod:`._filters`. Recorded
content (messages, tool arguments and results, row contents) and exception text are
redacted of every string the filters keep out, and of the call's credentials: a tool that
echoes its ``api_key`` into an error must not carry it into a span that way either.
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from ._compaction import step_figures
from ._figures import (
    step_time_attributes,
    time_to_first_chunk_attributes,
)
from ._filters import (
    AttributeValue,
    attribute_value,
    context_attributes,
    credential_strings,
    input_messages,
    output_messages,
    redact,
    request_attributes,
    row_attributes,
    row_contents,
    secret_strings,
    semconv_finish_reason,
    to_json,
    tool_arguments,
)
from ._metrics import (
    CallMeter,
    class_name,
    error_type as _error_type,
    instruments_for,
    meters_nothing,
)
from ._recorder import TOOL_SPAN, Recorder
from ._semconv import (
    provider_name,
    response_attributes,
    server_attributes,
    split_system,
    system_parts,
    usage_attributes,
)
from ._settings import TelemetrySettings

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


class _ToolSpan:
    """The handle ``tool_call`` yields: the span and what its error text must not show."""

    __slots__ = ("secrets", "span")

    def __init__(self, span: Span, secrets: set[str]) -> None:
        self.span = span
        self.secrets = secrets


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
        self._meter: CallMeter | None = None
        if not meters_nothing(settings.meter_provider):
            self._meter = CallMeter(instruments_for(settings.meter_provider))
        self._settings = settings
        self._operation = operation
        self._agent_name = agent_name or settings.function_id or "agent"
        self._tools = tools
        self._tools_include = settings.include_tools_context or {}
        self._runtime = runtime_context
        self._tools_context = tools_context
        self._credentials: set[str] = set()
        self._secrets: set[str] | None = None  # computed when first needed
        common: dict[str, AttributeValue] = {}
        if settings.function_id is not None:
            common["helix.function_id"] = settings.function_id
        for key, value in (settings.metadata or {}).items():
            common[f"helix.metadata.{key}"] = attribute_value(value)
        if conversation_id is not None:
            common["gen_ai.conversation.id"] = conversation_id
        self._common = common
        self._call: Span | None = None
        self._parent: otel_context.Context | None = None
        self._step: Span | None = None
        # The chat span whose model call ended, with that end (ns): it ends when its step
        # does, so that it can carry the step's own ``helix.step_time`` (tools included).
        self._held: tuple[Span, int] | None = None
        self._step_number = 0
        self._step_t0 = 0.0
        self._failed_attempts = 0
        self._ended = False
        self._tool_spans: dict[str, _ToolSpan] = {}  # open tool spans, by call id

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
        attrs: dict[str, AttributeValue] = {
            **self._common,
            "helix.operation.name": self._operation,
            # A stream_text/generate_text call is a tool loop of model calls: semconv names
            # that an agent invocation (its chat spans are the model calls).
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": request_model,
        }
        if self._operation == "invoke_agent":
            # semconv "Invoke agent" span: named "invoke_agent {gen_ai.agent.name}".
            name = f"invoke_agent {self._agent_name}"
            attrs["gen_ai.agent.name"] = self._agent_name
        else:
            name = self._operation
        self._set_runtime(runtime_context)
        attrs.update(self._runtime_attributes())
        # No explicit parent: the span current where the run is iterated (a request span).
        span = self._tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=attrs)
        # Content is built only for a span that records (not for one sampled out).
        if self._settings.record_inputs and span.is_recording():
            content = {"gen_ai.input.messages": self._content(input_messages(messages))}
            if system:
                content["gen_ai.system_instructions"] = self._content(system_parts(system))
            span.set_attributes(content)
        self._call = span
        if self._meter is not None:
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
        attrs: dict[str, AttributeValue] = {
            "gen_ai.response.finish_reasons": [reason],
            **usage_attributes(usage),
            "helix.steps": len(steps),
        }
        last_model = getattr(steps[-1], "response_model", None) if steps else None
        if last_model:
            attrs["gen_ai.response.model"] = str(last_model)
        if self._settings.record_outputs and span.is_recording():
            attrs["gen_ai.output.messages"] = self._content(output_messages(text, [], reason))
        span.set_attributes(attrs)
        span.end()
        if self._meter is not None:
            self._meter.call_finished(str(last_model) if last_model else None)

    def call_failed(self, error: BaseException) -> None:
        if self._ended:
            return
        self._ended = True
        if self._meter is not None:
            self._meter.failed(error)
        if self._step is not None and self._failed_attempts:
            self._step.set_attribute("helix.attempts", self._failed_attempts)
        self._release()
        spans = [s for s in (self._step, self._call) if s is not None]
        self._step = None
        for span in spans:
            self._fail(span, error)
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
        self._set_runtime(runtime_context)
        self._remember_credentials(params)
        record_inputs = self._settings.record_inputs
        provider, request_model = provider_name(model)
        server = server_attributes(params.get("api_base") or params.get("base_url"))
        attrs: dict[str, AttributeValue] = {
            **self._common,
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": request_model,
            "helix.step_number": step_number,
            **server,
        }
        attrs.update(request_attributes(params))
        attrs.update(self._runtime_attributes())
        attrs.update(row_attributes(context_rows))
        # semconv: CLIENT for a model behind a network hop; MAY be INTERNAL in-process.
        kind = SpanKind.INTERNAL if provider == "helix" else SpanKind.CLIENT
        span = self._tracer.start_span(
            f"chat {request_model}", context=self._parent, kind=kind, attributes=attrs
        )
        if record_inputs and span.is_recording():
            system, messages = split_system(params.get("messages") or [])
            content = {"gen_ai.input.messages": self._content(input_messages(messages))}
            if system:
                content["gen_ai.system_instructions"] = self._content(system_parts(system))
            if context_rows:
                content["helix.context.contents"] = self._content(row_contents(context_rows))
            span.set_attributes(content)
        for chunk in skipped:
            # A skipped context source is a moment of the step, not a property of it.
            event = {
                "helix.context.reason": str(getattr(chunk, "reason", "")),
                "helix.context.source": str(getattr(chunk, "source", "")),
            }
            span.add_event("context_skipped", event)
        self._step = span
        self._step_t0 = time.perf_counter()
        if self._meter is not None:
            self._meter.step_started(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": provider,
                    "gen_ai.request.model": request_model,
                    **server,
                }
            )

    def attempt_failed(self, attempt: Any) -> None:
        span = self._step
        if span is None:
            return
        self._failed_attempts += 1
        error = getattr(attempt, "error", None)
        delay = getattr(attempt, "delay", None)
        event: dict[str, AttributeValue] = {
            "helix.attempt": int(getattr(attempt, "number", self._failed_attempts)),
            "helix.attempt.will_retry": delay is not None,
            "helix.attempt.duration_s": round(float(getattr(attempt, "elapsed", 0.0)), 6),
        }
        if delay is not None:
            event["helix.attempt.retry_delay_s"] = round(float(delay), 6)
        if isinstance(error, BaseException):
            event["error.type"] = _error_type(error)
            code = getattr(error, "code", None)
            if isinstance(code, str):
                event["helix.error.code"] = code
            event["exception.message"] = self._scrub(str(error))
        span.add_event("helix.attempt_failed", event)

    def first_chunk(self, elapsed: float) -> None:
        if self._step is not None:
            self._step.set_attributes(time_to_first_chunk_attributes(elapsed))
        if self._meter is not None:
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
            attrs["gen_ai.output.messages"] = self._content(output_messages(text, calls, reason))
        span.set_attributes(attrs)
        self._release()
        self._held = (span, time.time_ns())
        if self._meter is not None:
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

    # -- tools ----------------------------------------------------------------------------

    @contextmanager
    def tool_call(self, *, call: Any, tool_context: Any) -> Iterator[Any]:
        name = str(getattr(call, "name", ""))
        # A tool reading a shared tools_context entry (an MCP server's) is filtered by its
        # own name or, failing that, by the entry's.
        include = self._tools_include.get(name)
        if include is None:
            key = getattr(self._tools.get(name), "context_key", None)
            include = self._tools_include.get(key) if isinstance(key, str) else None
        attrs: dict[str, AttributeValue] = {
            **self._common,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": str(getattr(call, "id", "")),
            "gen_ai.tool.type": "function",
            "helix.step_number": self._step_number,
        }
        description = getattr(self._tools.get(name), "description", None)
        if isinstance(description, str) and description:
            # Only a fixed description: a callable one is built from the tool's context.
            attrs["gen_ai.tool.description"] = description
        attrs.update(context_attributes("helix.tool_context.", tool_context, include))
        # What this tool's context keeps out, besides what the call's contexts keep out.
        secrets = self._secret_set() | secret_strings(tool_context, include)
        span = self._tracer.start_span(
            f"execute_tool {name}", context=self._parent, kind=SpanKind.INTERNAL, attributes=attrs
        )
        if self._settings.record_inputs and span.is_recording():
            span.set_attribute("gen_ai.tool.call.arguments", redact(tool_arguments(call), secrets))
        handle = _ToolSpan(span, secrets)
        call_id = str(getattr(call, "id", ""))
        self._tool_spans[call_id] = handle
        # Current inside the tool's own task only (entered and left in that task).
        token = otel_context.attach(trace.set_span_in_context(span))
        current = TOOL_SPAN.set(span)
        try:
            yield handle
        except BaseException as exc:
            self._fail(span, exc, secrets)
            raise
        finally:
            TOOL_SPAN.reset(current)
            otel_context.detach(token)
            span.end()
            self._tool_spans.pop(call_id, None)

    def token_resolved(
        self, *, tool_call_id: str, strategy: str, source: str, secrets: set[str]
    ) -> None:
        handle = self._tool_spans.get(tool_call_id)
        if handle is None:
            return
        # The span's error text must not show the token either (a tool that quotes it).
        handle.secrets.update(secrets)
        cached = source in ("step", "store")
        attrs: dict[str, AttributeValue] = {
            "helix.auth.strategy": strategy,
            "helix.auth.token_source": source,
            "helix.auth.cached": cached,
        }
        handle.span.set_attributes(attrs)
        handle.span.add_event("helix.auth.token_resolved", attrs)

    def sign_in_required(self, handle: Any, *, strategy: str) -> None:
        if not isinstance(handle, _ToolSpan):
            return
        # The strategy's name only: the sign-in URL is the user's, not telemetry's.
        attrs: dict[str, AttributeValue] = {
            "helix.auth.strategy": strategy,
            "helix.auth.parked": True,
        }
        handle.span.set_attributes(attrs)
        handle.span.add_event("helix.auth.sign_in_required", {"helix.auth.strategy": strategy})

    def tool_finished(
        self, handle: Any, *, result: Any, error: BaseException | None = None
    ) -> None:
        if not isinstance(handle, _ToolSpan):
            return
        span = handle.span
        status = getattr(result, "status", None)
        span.set_attribute("helix.tool.status", str(status))
        if status == "output":
            if self._settings.record_outputs and span.is_recording():
                value = attribute_value(getattr(result, "output", None))
                if isinstance(value, str):
                    value = redact(value, handle.secrets)
                span.set_attribute("gen_ai.tool.call.result", value)
        elif status == "error":
            # The loop calls this from inside its ``except`` block: when the exception is
            # not passed in, it is the one being handled.
            exc = error if error is not None else sys.exc_info()[1]
            if exc is None:
                exc = RuntimeError(str(getattr(result, "error", None) or "the tool failed"))
            self._fail(span, exc, handle.secrets)

    # -- helpers --------------------------------------------------------------------------

    def _end_step(self) -> None:
        self._release()
        if self._step is not None:
            self._step.end()
            self._step = None

    def _set_runtime(self, runtime_context: Mapping[str, Any]) -> None:
        if runtime_context is not self._runtime:
            self._runtime = runtime_context
            self._secrets = None

    def _runtime_attributes(self) -> dict[str, str | bool | int | float]:
        include = self._settings.include_runtime_context
        return context_attributes("helix.runtime_context.", self._runtime, include)

    def request_sent(self, params: Mapping[str, Any]) -> None:
        self._remember_credentials(params)

    def _remember_credentials(self, params: Mapping[str, Any]) -> None:
        found = credential_strings(params)
        if not found <= self._credentials:
            self._credentials |= found
            self._secrets = None

    def _secret_set(self) -> set[str]:
        """Every string this call's filters keep out of its spans, plus its credentials."""
        if self._secrets is None:
            secrets = set(self._credentials)
            secrets |= secret_strings(self._runtime, self._settings.include_runtime_context)
            for name, entry in self._tools_context.items():
                secrets |= secret_strings(entry, self._tools_include.get(name))
            self._secrets = secrets
        return self._secrets

    def _scrub(self, text: str) -> str:
        secrets = self._secret_set()
        return redact(text, secrets) if secrets else text

    def _content(self, value: Any) -> str:
        return self._scrub(to_json(value))

    def _fail(self, span: Span, exc: BaseException, secrets: set[str] | None = None) -> None:
        if isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
            # Cancelled, or closed by its consumer: an "aborted" marker, no stack. It is not
            # a failure of the operation (semconv "Recording errors" is about errors).
            span.set_attribute("helix.aborted", True)
            return
        hidden = secrets if secrets is not None else self._secret_set()
        message = redact(str(exc), hidden)
        stack = redact("".join(traceback.format_exception(exc)), hidden)
        span.set_attribute("error.type", _error_type(exc))
        code = getattr(exc, "code", None)
        if isinstance(code, str):
            span.set_attribute("helix.error.code", code)
        # By hand: the SDK's record_exception would put str(exc) on the span unredacted.
        exception = {
            "exception.type": class_name(exc),
            "exception.message": message,
            "exception.stacktrace": stack,
        }
        span.add_event("exception", exception)
        span.set_status(Status(StatusCode.ERROR, message))
