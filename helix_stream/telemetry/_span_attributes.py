"""What the call span and each chat span open with (names, kinds, attributes), and what the
call span closes with.

Built from the call's settings, each step's request and the call's steps; no span is touched
here (the recorder opens and ends the spans). Context values are not in these: they reach
spans only through :mod:`._filters`, which the recorder applies with the call's secrets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import SpanKind

from ._filters import AttributeValue, attribute_value, request_attributes
from ._semconv import provider_name, server_attributes, usage_attributes
from ._settings import TelemetrySettings

__all__ = [
    "ChatRequest",
    "call_end_attributes",
    "call_span_start",
    "chat_request",
    "common_attributes",
    "skipped_events",
]


def common_attributes(
    settings: TelemetrySettings, conversation_id: str | None
) -> dict[str, AttributeValue]:
    """The attributes every span of the call carries: function id, metadata, conversation."""
    common: dict[str, AttributeValue] = {}
    if settings.function_id is not None:
        common["helix.function_id"] = settings.function_id
    for key, value in (settings.metadata or {}).items():
        common[f"helix.metadata.{key}"] = attribute_value(value)
    if conversation_id is not None:
        common["gen_ai.conversation.id"] = conversation_id
    return common


def call_span_start(
    operation: str, agent_name: str, provider: str, request_model: str
) -> tuple[str, dict[str, AttributeValue]]:
    """The call span's name and its own attributes (the common ones go before them)."""
    attrs: dict[str, AttributeValue] = {
        "helix.operation.name": operation,
        # A stream_text/generate_text call is a tool loop of model calls: semconv names
        # that an agent invocation (its chat spans are the model calls).
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": request_model,
    }
    if operation == "invoke_agent":
        # semconv "Invoke agent" span: named "invoke_agent {gen_ai.agent.name}".
        attrs["gen_ai.agent.name"] = agent_name
        return f"invoke_agent {agent_name}", attrs
    return operation, attrs


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """What one step's request says about its model call's span and metrics."""

    name: str
    kind: SpanKind
    attributes: dict[str, AttributeValue]  # the span's own (the common ones go before them)
    metered: dict[str, AttributeValue]  # the meter's: operation, provider, model, server


def chat_request(model: str, params: Mapping[str, Any], *, step_number: int) -> ChatRequest:
    """The chat span of step ``step_number``, from the model named and the request's params."""
    provider, request_model = provider_name(model)
    server = server_attributes(params.get("api_base") or params.get("base_url"))
    named: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": request_model,
    }
    attrs: dict[str, AttributeValue] = {**named, "helix.step_number": step_number, **server}
    attrs.update(request_attributes(params))
    # semconv: CLIENT for a model behind a network hop; MAY be INTERNAL in-process.
    kind = SpanKind.INTERNAL if provider == "helix" else SpanKind.CLIENT
    return ChatRequest(
        name=f"chat {request_model}",
        kind=kind,
        attributes=attrs,
        metered={**named, **server},
    )


def skipped_events(skipped: Sequence[Any]) -> list[dict[str, AttributeValue]]:
    """A ``context_skipped`` event's attributes for each context source the step skipped."""
    # A skipped context source is a moment of the step, not a property of it.
    return [
        {
            "helix.context.reason": str(getattr(chunk, "reason", "")),
            "helix.context.source": str(getattr(chunk, "source", "")),
        }
        for chunk in skipped
    ]


def call_end_attributes(
    steps: Sequence[Any], reason: str, usage: Any
) -> tuple[dict[str, AttributeValue], str | None]:
    """The call span's closing attributes (``reason`` in semconv's terms), and the model that
    answered last."""
    attrs: dict[str, AttributeValue] = {
        "gen_ai.response.finish_reasons": [reason],
        **usage_attributes(usage),
        "helix.steps": len(steps),
    }
    last_model = getattr(steps[-1], "response_model", None) if steps else None
    if last_model:
        attrs["gen_ai.response.model"] = str(last_model)
    return attrs, str(last_model) if last_model else None
