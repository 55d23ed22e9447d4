"""Telemetry on OpenTelemetry: GenAI semantic-convention spans with shallow context filters.

Pass :class:`TelemetrySettings` as ``telemetry=`` to ``stream_text``, ``generate_text``, an
``Agent`` or ``Executor.run``::

    from helix_stream.telemetry import TelemetrySettings

    result = hs.stream_text(
        model="openai/gpt-4o-mini",
        prompt="Is customer cust_123 eligible for priority support?",
        tools=[customer_lookup],
        runtime_context={"request_id": "req_abc", "tenant_id": "tenant_123"},
        tools_context={"customer_lookup": {"api_key": key, "region": "us"}},
        telemetry=TelemetrySettings(
            include_runtime_context={"request_id": True},
            include_tools_context={"customer_lookup": {"region": True}},
        ),
    )

OpenTelemetry itself is imported only when a call records spans, never by
``import helix_stream``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._filters import check_tools_filter
from ._recorder import NOOP_RECORDER, Recorder, annotate_tool_call
from ._semconv import mcp_attributes
from ._settings import TelemetrySettings

__all__ = [
    "NOOP_RECORDER",
    "Recorder",
    "TelemetrySettings",
    "annotate_tool_call",
    "mcp_attributes",
    "recorder_for",
]


def recorder_for(
    settings: TelemetrySettings | None,
    *,
    operation: str,
    tools: Mapping[str, Any] | None = None,
    runtime_context: Mapping[str, Any] | None = None,
    tools_context: Mapping[str, Any] | None = None,
    agent_name: str | None = None,
    conversation_id: str | None = None,
) -> Recorder:
    """The recorder for one call (the loop calls this once per call, before anything runs).

    Args:
        settings: The call's ``telemetry=``; ``None`` or ``enabled=False`` records nothing.
        operation: ``"stream_text"``, ``"generate_text"`` or ``"invoke_agent"``.
        tools: The call's tools by name (a tools filter may only name these).
        runtime_context: The runtime context the call starts with.
        tools_context: The raw per-tool contexts, by tool name.
        agent_name: The agent's name, for ``invoke_agent {name}`` spans.
        conversation_id: The session id, recorded as ``gen_ai.conversation.id``.

    Returns:
        :data:`NOOP_RECORDER` when telemetry is off, or on without any tracer provider
        configured (OpenTelemetry's global default records nothing); else a recorder that
        creates this call's spans.

    Raises:
        InvalidRequestError: ``settings.include_tools_context`` names a tool the call does
            not have (checked even when telemetry is disabled, so that a typo shows up before
            the day it is switched on).

    Example::

        from helix_stream.telemetry import TelemetrySettings

        recorder = recorder_for(TelemetrySettings(), operation="invoke_agent", agent_name="support")
    """
    if settings is None:
        return NOOP_RECORDER
    if not isinstance(settings, TelemetrySettings):
        from ..errors import InvalidRequestError

        raise InvalidRequestError(
            f"telemetry= takes a TelemetrySettings, not {type(settings).__name__}."
        )
    check_tools_filter(settings.include_tools_context, tools)
    if not settings.enabled:
        return NOOP_RECORDER
    from ._otel import OtelRecorder, records_nothing

    if records_nothing(settings):
        return NOOP_RECORDER
    return OtelRecorder(
        settings,
        operation=operation,
        tools=dict(tools or {}),
        runtime_context=runtime_context or {},
        tools_context=tools_context or {},
        agent_name=agent_name,
        conversation_id=conversation_id,
    )
