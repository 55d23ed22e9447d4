"""Where a request's cached prefix breaks: its segments, their fingerprints, the first change.

A provider caches a request's prefix in one order: the tools, then the system prompt, then the
messages one by one (Anthropic's cache order; OpenAI's and Gemini's prefixes hold the same
parts). A request is cut into those **segments**:

* ``"tools"``: the tool definitions, as one list (re-ordering them changes it);
* ``"system"``: the system prompt: Anthropic's and Bedrock's ``system``, Gemini's
  ``systemInstruction`` (or ``system_instruction``), or the leading ``system``/``developer``
  messages of the OpenAI format;
* ``"message N"``: each other message, ``N`` its index in the request's ``messages`` (or
  Gemini's ``contents``) list, as the request itself numbers it.

Each segment's fingerprint is a hash of its JSON bytes, in the key order the request has (a map
iterated in another order is another prefix), **without its cache markers**: markers move from
call to call (the last message's marker moves forward) and are not part of what the provider
caches. A marker is looked for only where one can be: on a tool, a message, a content block, a
system block (``cache_control``), or a Bedrock ``cachePoint`` block, so removing them copies only
what holds one. A content list that is one plain text block is the same segment as that text
(``prompt_cache`` puts the system prompt's marker on such a block).

:func:`first_divergence` compares two fingerprints in cache order. It is the one rule the cache
ledger (``StepResult.cache.diverged_at``) and the test helper
(``helix_stream.testing.assert_prefix_stable``) both use. The work is once per model call: one
JSON encoding of the request, as the provider's client does anyway.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._cache_ledger import CacheBreakpoint, CacheTTL

__all__ = ["Fingerprint", "breakpoints", "fingerprint", "first_divergence"]

_MARKS = ("cache_control", "cachePoint")
_SYSTEM_ROLES = ("system", "developer")
# Where a body keeps its system prompt apart: Anthropic's and Bedrock's ``system``, Gemini's
# ``systemInstruction`` (``system_instruction`` as litellm writes it).
_SYSTEM_KEYS = ("system", "systemInstruction", "system_instruction")


_SIZE = 16  # bytes of each segment's hash


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """A request's segments as hashes, in cache order (see the module docstring): the
    messages' hashes are packed one after the other (16 bytes each), the first being the
    message at index ``start`` of the request's list. A session's book keeps one per model."""

    tools: bytes | None
    system: bytes | None
    start: int
    messages: bytes


def _digest(value: Any) -> bytes:
    data = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.blake2b(data.encode(), digest_size=_SIZE).digest()


def _is_mark_block(value: Any) -> bool:
    """A Bedrock ``{"cachePoint": {...}}`` block: a marker of its own, not content."""
    return isinstance(value, Mapping) and len(value) == 1 and "cachePoint" in value


def _unmarked(value: Any) -> Any:
    """``value`` (a tool, message, block) without a marker key; itself when it has none."""
    if isinstance(value, Mapping) and any(k in value for k in _MARKS):
        return {k: v for k, v in value.items() if k not in _MARKS}
    return value


def _blocks(value: Any) -> Any:
    """A content or system list without its markers; one plain text block is its text."""
    if not isinstance(value, list):
        return value
    out = [_unmarked(b) for b in value if not _is_mark_block(b)]
    only = out[0] if len(out) == 1 else None
    if isinstance(only, Mapping) and only.keys() == {"type", "text"} and only["type"] == "text":
        return only["text"]
    return out


def _message(message: Any) -> Any:
    message = _unmarked(message)
    if not isinstance(message, Mapping):
        return message
    for key in ("content", "parts"):
        if isinstance(message.get(key), list):
            return {**message, key: _blocks(message[key])}
    return message


def _tools(body: Mapping[str, Any]) -> Any:
    tools = body.get("tools")
    if tools is None and isinstance(body.get("toolConfig"), Mapping):
        tools = body["toolConfig"].get("tools")  # Bedrock Converse
    if not tools:
        return None
    return [_unmarked(t) for t in tools if not _is_mark_block(t)]


def _leading_system(messages: Sequence[Any]) -> int:
    """How many of the OpenAI format's messages are its system prompt (the leading ones)."""
    leading = 0
    while leading < len(messages) and _role(messages[leading]) in _SYSTEM_ROLES:
        leading += 1
    return leading


def _split(body: Mapping[str, Any]) -> tuple[Any, Sequence[Any], int]:
    """The system segment's value (or ``None``), the request's message list, and where its
    messages proper start in it."""
    messages = body.get("messages")
    if messages is None:
        messages = body.get("contents")  # Gemini
    messages = messages if isinstance(messages, list) else []
    system = next((body[k] for k in _SYSTEM_KEYS if body.get(k) is not None), None)
    if system is not None:
        return _blocks(system), messages, 0
    leading = _leading_system(messages)
    if leading:
        return [_message(m) for m in messages[:leading]], messages, leading
    return None, messages, 0


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


def fingerprint(body: Mapping[str, Any]) -> Fingerprint:
    """The segments of ``body``: ``litellm.acompletion`` params (the OpenAI format) or a
    provider's request body as a server received it (Anthropic, OpenAI, Bedrock, Gemini)."""
    tools = _tools(body)
    system, messages, start = _split(body)
    return Fingerprint(
        tools=None if tools is None else _digest(tools),
        system=None if system is None else _digest(system),
        start=start,
        messages=b"".join(_digest(_message(messages[i])) for i in range(start, len(messages))),
    )


def first_divergence(previous: Fingerprint, current: Fingerprint) -> str | None:
    """The first segment of ``current`` that differs from ``previous``, in cache order;
    ``None`` when ``current`` is ``previous`` with more messages after it (or the same).

    A message ``previous`` had and ``current`` lacks counts as changed (a rewind, a history
    cut short): ``"message N"`` with ``N`` its index in ``previous``.

    Example::

        first_divergence(fingerprint(first_body), fingerprint(second_body))   # "system"
    """
    if previous.tools != current.tools:
        return "tools"
    if previous.system != current.system:
        return "system"
    before, now = previous.messages, current.messages
    if previous.start == current.start and now[: len(before)] == before:
        return None
    position = 0  # the first message whose hash differs (or that ``current`` lacks)
    while position * _SIZE < len(before):
        cut = slice(position * _SIZE, (position + 1) * _SIZE)
        if before[cut] != now[cut]:
            break
        position += 1
    return f"message {previous.start + position}"


def _ttl(marker: Any) -> CacheTTL:
    if isinstance(marker, Mapping) and marker.get("ttl") == "1h":
        return "1h"
    return "5m"


def _marker_of(value: Any) -> Any:
    """The marker a tool, message or block carries (``None`` when it has none)."""
    if not isinstance(value, Mapping):
        return None
    if "cache_control" in value and value["cache_control"] is not None:
        return value["cache_control"]
    if _is_mark_block(value):
        return value["cachePoint"]
    return None


def _message_marker(message: Any) -> Any:
    found = _marker_of(message)
    content = message.get("content") if isinstance(message, Mapping) else None
    for block in content if isinstance(content, list) else ():
        found = _marker_of(block) or found
    return found


def _point(segment: str, markers: Sequence[Any]) -> list[CacheBreakpoint]:
    found = [m for m in markers if m is not None]
    return [CacheBreakpoint(segment=segment, ttl=_ttl(found[-1]))] if found else []


def breakpoints(body: Mapping[str, Any]) -> tuple[CacheBreakpoint, ...]:
    """The cache breakpoints ``body`` (``litellm.acompletion`` params, or an Anthropic body)
    carries, in cache order, each with its lifetime (a segment with several markers is listed
    once, with the last one's lifetime)."""
    out = _point("tools", [_marker_of(t) for t in body.get("tools") or ()])
    messages = body.get("messages") or []
    system = body.get("system")
    if isinstance(system, list):
        out += _point("system", [_marker_of(b) for b in system])
    leading = _leading_system(messages) if system is None else 0
    out += _point("system", [_message_marker(m) for m in messages[:leading]])
    for index in range(leading, len(messages)):
        out += _point(f"message {index}", [_message_marker(messages[index])])
    return tuple(out)
