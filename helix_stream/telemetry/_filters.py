"""What may reach a span, and in what form: the include-filters, allowlists, attribute values.

README, "Telemetry" (its "Keep sensitive values out of telemetry"): telemetry receives a
filtered copy of the runtime context and of each tool's context. Only the top-level properties
marked ``True`` are sent, each whole; an omitted filter sends nothing. Everything here is a
pure function (no OpenTelemetry import), so the rules can be read and tested on their own.

A context is a mapping (runtime context, a raw ``tools_context`` entry) or a validated
pydantic model (what a tool receives as ``ctx.context``); both are read the same way.

The same rule of "only what is named" applies to the litellm params (only known
``gen_ai.request.*`` settings, never ``api_key``/``api_base``/headers) and to context rows
(kinds, sources and a count; their text only when inputs are recorded). Messages are shaped
as the GenAI semantic conventions' input/output message JSON (role + typed parts).
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
    "credential_strings",
    "input_messages",
    "output_messages",
    "redact",
    "request_attributes",
    "row_attributes",
    "row_contents",
    "secret_strings",
    "semconv_finish_reason",
    "to_json",
    "tool_arguments",
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
    """Raise if the tools filter names a tool (or a shared context entry) the call does not have.

    A misspelt tool name would otherwise send nothing, silently: the kind of mistake a
    user only finds when the dashboard they need is empty.

    Raises:
        InvalidRequestError: naming the unknown tool(s) and the tools the call has.
    """
    if not include:
        return
    known = set(tools or ())
    if isinstance(tools, Mapping):
        # The shared tools_context entries the tools read (an MCP server's name) too.
        keys = (getattr(tool, "context_key", None) for tool in tools.values())
        known |= {key for key in keys if isinstance(key, str)}
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


# Param names whose string values are credentials (api_key, aws_secret_access_key, extra_headers,
# azure_ad_token, ...): redacted from anything recorded and from every model error's text.
_CREDENTIAL_HINTS = ("key", "secret", "token", "password", "headers", "authorization")


def credential_strings(params: Mapping[str, Any]) -> set[str]:
    """The credential strings among a model call's params (the one rule for what is one).

    A param whose name contains ``key``, ``secret``, ``token``, ``password``, ``headers`` or
    ``authorization`` holds credentials: each string in its value (at any depth) of at least
    four characters is one. ``messages`` and ``tools`` are content, not credentials. Used by
    telemetry (nothing recorded carries them) and by the model error translation (a provider
    that echoes the key in its error message does not get it into ``ModelAuthError``).
    """
    out: set[str] = set()
    for key, value in params.items():
        lowered = key.lower()
        if key in ("messages", "tools") or not any(h in lowered for h in _CREDENTIAL_HINTS):
            continue
        _strings(value, out)
    return out


def redact(text: str, secrets: set[str]) -> str:
    """``text`` with each of ``secrets`` replaced by ``[REDACTED]`` (longest first)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, "[REDACTED]")
    return text


# litellm params recorded as gen_ai.request.* (semconv "Inference" span). Nothing else of
# the params is read: they also hold api_key, api_base and headers.
_NUMBER_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
}


def request_attributes(params: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """The known request settings of a litellm call as ``gen_ai.request.*`` (an allowlist)."""
    out: dict[str, AttributeValue] = {}
    for key, attr in _NUMBER_PARAMS.items():
        value = params.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[attr] = value
    stop = params.get("stop")
    if isinstance(stop, str):
        out["gen_ai.request.stop_sequences"] = [stop]
    elif isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop):
        out["gen_ai.request.stop_sequences"] = list(stop)
    n = params.get("n")
    if isinstance(n, int) and not isinstance(n, bool) and n != 1:
        out["gen_ai.request.choice.count"] = n
    if params.get("response_format") is not None:
        out["gen_ai.output.type"] = "json"
    return out


def _row_field(row: Any, name: str) -> Any:
    """A context row's field by duck typing: a dict row, ``row.payload`` or ``row.<name>``."""
    if isinstance(row, Mapping):
        return row.get(name)
    payload = getattr(row, "payload", None)
    if isinstance(payload, Mapping) and name in payload:
        return payload[name]
    if payload is not None and hasattr(payload, name):
        return getattr(payload, name)
    return getattr(row, name, None)


def row_attributes(rows: Sequence[Any]) -> dict[str, AttributeValue]:
    """What a step's context rows show by default: a count, their kinds and sources."""
    if not rows:
        return {"helix.context.rows": 0}
    return {
        "helix.context.rows": len(rows),
        "helix.context.kinds": [str(_row_field(r, "kind") or "") for r in rows],
        "helix.context.sources": [str(_row_field(r, "source") or "") for r in rows],
    }


def row_contents(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """The rows' payloads, text included (recorded only when inputs are recorded)."""
    fields = ("kind", "source", "content", "disable", "enable", "memories")
    return [{k: v for k in fields if (v := _row_field(r, k)) is not None} for r in rows]


def tool_arguments(call: Any) -> str:
    """A tool call's arguments as JSON (the raw text when they did not parse)."""
    parsed = getattr(call, "input", None)
    if isinstance(parsed, (dict, list)):
        return to_json(parsed)
    return str(getattr(call, "arguments", "") or "")


# AI SDK finish reasons -> the semconv output-message finish_reason values.
_FINISH = {"tool-calls": "tool_call", "content-filter": "content_filter"}


def semconv_finish_reason(reason: str) -> str:
    """An AI SDK finish reason (``tool-calls``) as GenAI semconv names it (``tool_call``)."""
    return _FINISH.get(reason, reason)


def _parsed(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def _message_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if message.get("role") == "tool":
        return [
            {"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}
        ]
    if isinstance(content, str):
        if content:
            parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "text":
                parts.append({"type": "text", "content": part.get("text", "")})
            elif isinstance(part, Mapping):
                parts.append({"type": str(part.get("type", "unknown"))})
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": fn.get("name"),
                "arguments": _parsed(fn.get("arguments")),
            }
        )
    return parts


def input_messages(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """OpenAI-format messages in the semconv ``gen_ai.input.messages`` shape (role + parts)."""
    return [
        {"role": str(m.get("role", "user")), "parts": _message_parts(m)}
        for m in messages
        if isinstance(m, Mapping)
    ]


def output_messages(
    text: str, tool_calls: Sequence[Any], finish_reason: str
) -> list[dict[str, Any]]:
    """One model output in the semconv ``gen_ai.output.messages`` shape."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for call in tool_calls:
        parts.append(
            {
                "type": "tool_call",
                "id": getattr(call, "id", None),
                "name": getattr(call, "name", None),
                "arguments": getattr(call, "input", None),
            }
        )
    return [{"role": "assistant", "parts": parts, "finish_reason": finish_reason}]
