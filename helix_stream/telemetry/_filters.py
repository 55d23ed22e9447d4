"""The shallow include-filters for runtime and tools context, and attribute values.

Reference 002, "Keep sensitive values out of telemetry": telemetry receives a filtered copy
of the runtime context and of each tool's context. Only the top-level properties marked
``True`` are sent, each whole; an omitted filter sends nothing. Everything here is a pure
function (no OpenTelemetry import), so the rules can be read and tested on their own.

A context is a mapping (runtime context, a raw ``tools_context`` entry) or a validated
pydantic model (what a tool receives as ``ctx.context``); both are read the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from ..errors import InvalidRequestError

__all__ = [
    "AttributeValue",
    "attribute_value",
    "check_tools_filter",
    "context_attributes",
    "redact",
    "secret_strings",
    "to_json",
]

AttributeValue = str | bool | int | float | Sequence[str]

# Shorter excluded strings are not redacted from error text: "us" or "1" would mangle every
# message while protecting nothing (they are not secrets anyone could recognise).
_MIN_SECRET_LENGTH = 4


def to_json(value: Any) -> str:
    """``value`` as compact JSON; pydantic models by their JSON dump, anything else as str."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return str(value)


def attribute_value(value: Any) -> str | bool | int | float:
    """A span attribute value: str, bool, int and float as they are, anything else as JSON.

    OpenTelemetry attributes cannot hold ``None``, mappings or mixed lists; serializing
    every non-scalar keeps the value whole (the filter is shallow) and the SDK silent.
    """
    if isinstance(value, (str, bool, int, float)):
        return value
    return to_json(value)


def _properties(context: Any) -> Iterator[tuple[str, Any]]:
    """The top-level (name, value) pairs of a context."""
    if context is None:
        return
    if isinstance(context, Mapping):
        for key, value in context.items():
            yield str(key), value
    elif isinstance(context, BaseModel):
        for name in type(context).model_fields:
            yield name, getattr(context, name)


def context_attributes(
    prefix: str, context: Any, include: Mapping[str, bool] | None
) -> dict[str, str | bool | int | float]:
    """``{prefix + property: value}`` for the properties ``include`` marks ``True``.

    Omitted (``None``), nothing is sent; a property marked ``False`` or absent is never read
    into the result. Only the filter's keys are looked up, so the name of a property that
    is not sent does not appear either.
    """
    if not include or context is None:
        return {}
    out: dict[str, str | bool | int | float] = {}
    for key, wanted in include.items():
        if wanted is not True:
            continue
        if isinstance(context, Mapping):
            if key not in context:
                continue
            value = context[key]
        elif isinstance(context, BaseModel):
            if key not in type(context).model_fields:
                continue
            value = getattr(context, key)
        else:
            continue
        out[f"{prefix}{key}"] = attribute_value(value)
    return out


def check_tools_filter(include: Mapping[str, Mapping[str, bool]] | None, tools: Any) -> None:
    """Raise if the tools filter names a tool the call does not have.

    A misspelt tool name would otherwise send nothing, silently: the kind of mistake a
    user only finds when the dashboard they need is empty.

    Raises:
        InvalidRequestError: naming the unknown tool(s) and the tools the call has.
    """
    if not include:
        return
    known = set(tools or ())
    unknown = sorted(name for name in include if name not in known)
    if unknown:
        names = ", ".join(repr(n) for n in unknown)
        have = ", ".join(repr(n) for n in sorted(known)) or "no tools"
        raise InvalidRequestError(
            f"TelemetrySettings.include_tools_context names {names}, which this call does "
            f"not have (it has {have}). Use the tool names passed in tools=."
        )


def _strings(value: Any, out: set[str], depth: int = 0) -> None:
    if depth > 8:
        return
    if isinstance(value, str):
        if len(value) >= _MIN_SECRET_LENGTH:
            out.add(value)
    elif isinstance(value, (bool, int, float)) or value is None:
        return
    elif isinstance(value, (Mapping, BaseModel)):
        for _, item in _properties(value):
            _strings(item, out, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in value:
            _strings(item, out, depth + 1)
    else:
        _strings(str(value), out, depth + 1)


def secret_strings(context: Any, include: Mapping[str, bool] | None) -> set[str]:
    """The string values held under the properties that ``include`` does not send.

    Used only on the error path, to redact them from exception text before it is recorded:
    an error message may quote a value the filter kept out (a tool's ``api_key`` in a
    provider's error, say), and a span must not carry it in that way either.
    """
    out: set[str] = set()
    for key, value in _properties(context):
        if include is not None and include.get(key) is True:
            continue
        _strings(value, out)
    return out


def redact(text: str, secrets: set[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``[REDACTED]`` (longest first)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
    return text
