"""The ``execute_tool`` spans of one call: opening one around a tool's body, the auth events on
it (a token resolved, a sign-in asked for), and its result or error.

A tool span is a child of the call span, given explicitly, and is made current only inside the
tool's own task (so that spans the tool's code creates nest under it). Its error text and
result are redacted of the call's secrets, of what the tool's own context keeps out, and of a
token resolved for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context, trace
from opentelemetry.trace import Span, SpanKind, Tracer

from ._call_secrets import CallSecrets
from ._filters import (
    AttributeValue,
    attribute_value,
    context_attributes,
    redact,
    secret_strings,
    tool_arguments,
)
from ._recorder import TOOL_SPAN
from ._settings import TelemetrySettings
from ._span_errors import record_error

__all__ = ["ToolSpans"]


class _ToolSpan:
    """The handle ``tool_call`` yields: the span and what its error text must not show."""

    __slots__ = ("secrets", "span")

    def __init__(self, span: Span, secrets: set[str]) -> None:
        self.span = span
        self.secrets = secrets


class ToolSpans:
    """Opens, annotates and ends one call's tool spans (the recorder delegates to it)."""

    def __init__(
        self,
        tracer: Tracer,
        settings: TelemetrySettings,
        *,
        tools: Mapping[str, Any],
        common: Mapping[str, AttributeValue],
        secrets: CallSecrets,
    ) -> None:
        self._tracer = tracer
        self._settings = settings
        self._tools = tools
        self._common = common
        self._secrets = secrets
        self._open: dict[str, _ToolSpan] = {}  # open tool spans, by call id

    @contextmanager
    def tool_call(
        self, *, call: Any, tool_context: Any, parent: Any, step_number: int
    ) -> Iterator[Any]:
        """The span around one tool's body, a child of ``parent`` (the call span's context)."""
        name = str(getattr(call, "name", ""))
        # A tool reading a shared tools_context entry (an MCP server's) is filtered by its
        # own name or, failing that, by the entry's.
        tools_include = self._secrets.tools_include
        include = tools_include.get(name)
        if include is None:
            key = getattr(self._tools.get(name), "context_key", None)
            include = tools_include.get(key) if isinstance(key, str) else None
        attrs: dict[str, AttributeValue] = {
            **self._common,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": str(getattr(call, "id", "")),
            "gen_ai.tool.type": "function",
            "helix.step_number": step_number,
        }
        description = getattr(self._tools.get(name), "description", None)
        if isinstance(description, str) and description:
            # Only a fixed description: a callable one is built from the tool's context.
            attrs["gen_ai.tool.description"] = description
        attrs.update(context_attributes("helix.tool_context.", tool_context, include))
        # What this tool's context keeps out, besides what the call's contexts keep out.
        secrets = self._secrets.secret_set() | secret_strings(tool_context, include)
        span = self._tracer.start_span(
            f"execute_tool {name}", context=parent, kind=SpanKind.INTERNAL, attributes=attrs
        )
        if self._settings.record_inputs and span.is_recording():
            span.set_attribute("gen_ai.tool.call.arguments", redact(tool_arguments(call), secrets))
        handle = _ToolSpan(span, secrets)
        call_id = str(getattr(call, "id", ""))
        self._open[call_id] = handle
        # Current inside the tool's own task only (entered and left in that task).
        token = otel_context.attach(trace.set_span_in_context(span))
        current = TOOL_SPAN.set(span)
        try:
            yield handle
        except BaseException as exc:
            record_error(span, exc, secrets)
            raise
        finally:
            TOOL_SPAN.reset(current)
            otel_context.detach(token)
            span.end()
            self._open.pop(call_id, None)

    def token_resolved(
        self, *, tool_call_id: str, strategy: str, source: str, secrets: set[str]
    ) -> None:
        """A token was resolved for the open tool call ``tool_call_id``."""
        handle = self._open.get(tool_call_id)
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
        """The tool call behind ``handle`` parked for a sign-in."""
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
        """The tool call behind ``handle`` ended with ``result``."""
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
            record_error(span, exc, handle.secrets)
