"""Reading recorded request bodies per wire format: the prefix sequence, the texts, the markers.

**Prefix stability (1a)** is checked on a canonical form of each body. Cache markers
(``cache_control`` keys, Bedrock ``cachePoint`` blocks) are removed first; everything else is
compared byte for byte as litellm sent it (JSON re-serialized in the order received):

* the **head** — everything but the conversation (system prompt, tools, settings) — must be
  equal from one request to the next;
* the **blocks** — one entry per content block, with its message's index and role (OpenAI and
  Mistral: one per message; Anthropic and Bedrock: each content block; Gemini: each part) —
  of each request must be a prefix of the next request's.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

from helix_stream.models._family import Family

ENVELOPE = re.compile(r'<context kind="[a-z-]+" source="[a-z-]+">\n.*\n</context>', re.S)


def strip_markers(value: Any) -> Any:
    """``value`` without ``cache_control`` keys and without Bedrock ``cachePoint`` blocks."""
    if isinstance(value, dict):
        return {k: strip_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_markers(v) for v in value if not (isinstance(v, dict) and "cachePoint" in v)]
    return value


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _conversation_key(family: Family) -> str:
    return "contents" if family == "gemini" else "messages"


def prefix_form(family: Family, body: dict[str, Any]) -> tuple[str, list[str]]:
    """(head, blocks) of a body, markers removed (module docstring)."""
    body = strip_markers(body)
    key = _conversation_key(family)
    head = _dump({k: v for k, v in body.items() if k != key})
    blocks: list[str] = []
    for index, message in enumerate(body.get(key) or []):
        role = message.get("role")
        if family in ("openai", "mistral", "other"):
            blocks.append(_dump([index, message]))
            continue
        parts = message["parts"] if family == "gemini" else message["content"]
        if isinstance(parts, str):
            parts = [{"text": parts}]
        blocks += [_dump([index, role, part]) for part in parts]
    return head, blocks


def assert_prefix_chain(family: Family, bodies: list[dict[str, Any]]) -> None:
    """Every request (markers removed) is a prefix of the next (module docstring)."""
    assert len(bodies) >= 2
    for n, (earlier, later) in enumerate(itertools.pairwise(bodies)):
        head_a, blocks_a = prefix_form(family, earlier)
        head_b, blocks_b = prefix_form(family, later)
        assert head_a == head_b, f"request {n + 1} → {n + 2}: the head changed"
        assert blocks_b[: len(blocks_a)] == blocks_a, (
            f"request {n + 1} is not a prefix of request {n + 2}:\n"
            + "\n".join(
                f"  block {i}: {a}\n       now: {b}"
                for i, (a, b) in enumerate(zip(blocks_a, blocks_b, strict=False))
                if a != b
            )
        )
        assert len(blocks_b) > len(blocks_a)


def texts(body: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Every string in a body with the role of the message (or ``"system"`` part) it is in."""

    def walk(value: Any, role: str) -> Iterator[tuple[str, str]]:
        if isinstance(value, dict):
            inner = value.get("role") if isinstance(value.get("role"), str) else role
            for key, item in value.items():
                yield from walk(
                    item, "system" if key in ("system", "system_instruction") else inner
                )
        elif isinstance(value, list):
            for item in value:
                yield from walk(item, role)
        elif isinstance(value, str):
            yield role, value

    yield from walk(body, "")


def envelopes(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every string that is exactly one whole envelope, in body order."""
    return [(role, text) for role, text in texts(body) if ENVELOPE.fullmatch(text)]
