"""``TelemetrySettings``: what a call records, where it sends it, and which context it may send.

The settings are checked when they are built (a filter of the wrong shape raises at once); a
filter naming a tool the call does not have is checked per call, by ``recorder_for``.
Importing this module does not import OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import InvalidRequestError

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["TelemetrySettings"]


def _flags(value: object, where: str) -> Mapping[str, bool]:
    """A read-only copy of a ``{property: bool}`` filter, or InvalidRequestError."""
    if not isinstance(value, Mapping):
        raise InvalidRequestError(
            f"{where} must be a dict of property names to True/False, not {type(value).__name__}."
        )
    for key, flag in value.items():
        if not isinstance(key, str) or not isinstance(flag, bool):
            raise InvalidRequestError(
                f"{where} must map property names (str) to True or False; "
                f"the entry for {key!r} is a {type(flag).__name__}."
            )
    return MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySettings:
    """OpenTelemetry settings for one call (``stream_text``, ``generate_text``, an agent run).

    Spans follow the OpenTelemetry GenAI semantic conventions: a span for the whole call, a
    ``chat {model}`` span per model call and an ``execute_tool {name}`` span per tool call,
    plus ``helix.*`` attributes for steps and context rows. The GenAI client metrics
    (``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration``,
    ``gen_ai.client.operation.time_to_first_chunk``) go to the meter provider.

    Runtime context and tools context are **not** sent unless you name the properties to
    send (AI SDK semantics, shallow: a property marked ``True`` is sent whole, as JSON when
    it is not a string, number or bool)::

        telemetry = TelemetrySettings(
            include_runtime_context={"request_id": True},
            include_tools_context={"customer_lookup": {"region": True}},
        )

    Attributes:
        enabled: Record spans. ``False`` (like ``telemetry=None``) records nothing and costs
            nothing.
        tracer_provider: The ``TracerProvider`` to use; the global one when ``None``.
        meter_provider: The ``MeterProvider`` for the GenAI metrics; the global one when
            ``None`` (nothing is measured while neither is configured).
        function_id: A name for this call site, recorded as ``helix.function_id`` on every
            span (group spans by feature in your backend).
        metadata: Extra attributes for every span, recorded as ``helix.metadata.<key>``
            (values that are not str/int/float/bool are recorded as JSON).
        record_inputs: Record request messages, tool arguments and context row contents.
        record_outputs: Record the model's output messages and tool results.
        include_runtime_context: ``{property: True}`` for each top-level runtime context
            property to send. Omitted, no runtime context is sent.
        include_tools_context: ``{tool_name: {property: True}}`` for each tool's context
            properties to send, on that tool's spans. Omitted, no tool context is sent. A
            tool name the call does not have raises
            :class:`~helix_stream.errors.InvalidRequestError` when the call is made.

    Raises:
        InvalidRequestError: a filter or ``metadata`` is not of the shape described above.
    """

    enabled: bool = True
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    function_id: str | None = None
    metadata: Mapping[str, Any] | None = None
    record_inputs: bool = True
    record_outputs: bool = True
    include_runtime_context: Mapping[str, bool] | None = None
    include_tools_context: Mapping[str, Mapping[str, bool]] | None = None

    def __post_init__(self) -> None:
        # Frozen copies: a dict changed by the caller after the fact must not widen what is
        # sent (README, "Telemetry").
        if self.include_runtime_context is not None:
            flags = _flags(self.include_runtime_context, "include_runtime_context")
            object.__setattr__(self, "include_runtime_context", flags)
        if self.include_tools_context is not None:
            tools = self.include_tools_context
            if not isinstance(tools, Mapping):
                raise InvalidRequestError(
                    "include_tools_context must be a dict of tool names to "
                    f"{{property: True/False}} dicts, not {type(tools).__name__}."
                )
            per_tool = {
                str(name): _flags(entry, f"include_tools_context[{name!r}]")
                for name, entry in tools.items()
            }
            object.__setattr__(self, "include_tools_context", MappingProxyType(per_tool))
        if self.metadata is not None:
            if not isinstance(self.metadata, Mapping) or not all(
                isinstance(k, str) for k in self.metadata
            ):
                raise InvalidRequestError("metadata must be a dict with str keys.")
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))
        if self.function_id is not None and not isinstance(self.function_id, str):
            raise InvalidRequestError("function_id must be a str.")
