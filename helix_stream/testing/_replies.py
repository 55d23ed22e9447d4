"""One scripted model call's reply: what :class:`~helix_stream.testing.ScriptedModel` answers.

This module owns the reply's shape (a dict, validated into :class:`Reply`) and the ids of the
tool calls it makes. The wire formats that carry it are :mod:`._wire`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidRequestError

__all__ = ["Reply", "ScriptedCall", "parse_reply"]

_KEYS = ("text", "reasoning", "tool_calls", "usage", "error", "stall", "cut_after")
_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_input_tokens")


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedCall:
    """A tool call the scripted model makes."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One model call's scripted answer (see :func:`parse_reply`)."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    input_tokens: int = 10
    output_tokens: int = 5
    cached_input_tokens: int = 0
    error: int | None = None
    stall: float = 0.0
    cut_after: int | None = None


def parse_reply(value: object, *, number: int) -> Reply:
    """``value`` (one entry of ``replies``, or what a ``FunctionModel`` function returned) as a
    :class:`Reply`; ``number`` is the model call's (0-based), for the tool call ids.

    Raises:
        InvalidRequestError: an unknown key or a value of the wrong type, named.
    """
    if not isinstance(value, Mapping):
        raise InvalidRequestError(
            f"reply {number}: a reply is a dict such as {{'text': 'Hi'}}, not "
            f"{type(value).__name__}"
        )
    unknown = sorted(set(value) - set(_KEYS))
    if unknown:
        raise InvalidRequestError(
            f"reply {number}: unknown key(s) {unknown}; a reply takes {list(_KEYS)}"
        )
    usage = value.get("usage") or {}
    if not isinstance(usage, Mapping) or set(usage) - set(_USAGE_KEYS):
        raise InvalidRequestError(f"reply {number}: usage takes the keys {list(_USAGE_KEYS)}")
    error = value.get("error")
    if error is not None and not (isinstance(error, int) and 400 <= error <= 599):
        raise InvalidRequestError(f"reply {number}: error is an HTTP status (400-599)")
    return Reply(
        text=_text(value, "text", number),
        reasoning=_text(value, "reasoning", number),
        tool_calls=tuple(_calls(value.get("tool_calls") or (), number)),
        input_tokens=int(usage.get("input_tokens", 10)),
        output_tokens=int(usage.get("output_tokens", 5)),
        cached_input_tokens=int(usage.get("cached_input_tokens", 0)),
        error=error,
        stall=float(value.get("stall") or 0.0),
        cut_after=value.get("cut_after"),
    )


def _text(value: Mapping[str, Any], key: str, number: int) -> str:
    text = value.get(key) or ""
    if not isinstance(text, str):
        raise InvalidRequestError(f"reply {number}: {key} is a string")
    return text


def _calls(calls: object, number: int) -> list[ScriptedCall]:
    if not isinstance(calls, list | tuple):
        raise InvalidRequestError(f"reply {number}: tool_calls is a list")
    out: list[ScriptedCall] = []
    for index, call in enumerate(calls):
        if (
            not isinstance(call, Mapping)
            or not isinstance(call.get("name"), str)
            or not isinstance(call.get("arguments", {}), Mapping)
        ):
            raise InvalidRequestError(
                f"reply {number}: each tool call is {{'name': str, 'arguments': dict}}"
            )
        call_id = call.get("id") or f"call_{number}_{index}"
        out.append(
            ScriptedCall(id=str(call_id), name=call["name"], arguments=call.get("arguments", {}))
        )
    return out
