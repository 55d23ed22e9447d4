"""The size limit of a tool's result: what the model reads of a result over it.

A tool's result is rendered into its tool message (text, or content parts with images:
``loop/_tool_media.py``). A rendered result over the limit — ``max_tool_result_bytes`` of the
run or the agent (default :data:`DEFAULT_MAX_TOOL_RESULT_BYTES`), or a tool's own
``hs.tool(..., max_result_bytes=...)`` — is cut: the model reads its first bytes up to the limit
(never half a UTF-8 character; an image that no longer fits is left out) and then a notice
saying how many bytes were cut and that the full result is with the application. A 10 MB MCP
result never reaches a provider that would refuse it, and so can never leave a session whose
every later turn fails.

The cut message is what the session stores, so every later request sends the same bytes (the
prompt cache keeps its prefix). The full result stays with the app: ``ToolResult.output`` (the
``action.result`` hook, ``on_tool_call_end``, ``step.tool_results``) is the tool's whole output,
and ``ToolResult.cut_bytes`` says how much the model's copy lacks.

A client tool's answer (``executor.submit_tool_result``, a ``useChat`` tool output) is cut the
same way when the paused turn resumes; the app has it whole already.

This module owns the rule (:func:`cut_content`, :func:`cut_text`) and the check of a limit
(:func:`check_result_limit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequestError

__all__ = [
    "DEFAULT_MAX_TOOL_RESULT_BYTES",
    "Cut",
    "check_result_limit",
    "cut_content",
    "cut_text",
    "notice",
]

DEFAULT_MAX_TOOL_RESULT_BYTES = 100_000
"""The default limit: about 25,000 tokens, well under every provider's request limit."""

Content = str | list[dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cut:
    """A tool message's content within its limit: ``content``, and ``cut_bytes``, how many
    bytes of the rendered result were left out (0: the whole result)."""

    content: Content
    cut_bytes: int = 0


def check_result_limit(value: object, *, argument: str) -> None:
    """Refuse a limit that is not a positive whole number of bytes (``None``: no limit).

    Raises:
        InvalidRequestError: naming ``argument``.
    """
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidRequestError(
            f"{argument} must be a positive number of bytes (or None for no limit), not {value!r}"
        )


def notice(total: int, cut: int, limit: int) -> str:
    """The line the model reads after a cut result (stable bytes: a pure function)."""
    return (
        f"\n\n[The tool's result was {total:,} bytes, over the limit of {limit:,} bytes: "
        f"the last {cut:,} bytes were cut here. The full result is available to the "
        "application, not in this conversation.]"
    )


def _size(part: dict[str, Any]) -> int:
    if part.get("type") == "image_url":
        image = part.get("image_url")
        url = image.get("url", "") if isinstance(image, dict) else image
        return len(str(url).encode())
    return len(str(part.get("text", "")).encode())


def _prefix(text: str, budget: int) -> str:
    """``text``'s first ``budget`` bytes, never ending inside a UTF-8 character."""
    return text.encode()[:budget].decode(errors="ignore")


def _cut_parts(parts: list[dict[str, Any]], limit: int, total: int) -> Cut:
    kept: list[dict[str, Any]] = []
    budget = limit
    for part in parts:
        size = _size(part)
        if part.get("type") == "image_url":
            if size <= budget:
                kept.append(part)
                budget -= size
            else:
                kept.append({"type": "text", "text": "[an image over the size limit, left out]"})
            continue
        text = _prefix(str(part.get("text", "")), budget)
        budget -= len(text.encode())
        if text:
            kept.append({"type": "text", "text": text})
    cut = total - (limit - budget)
    kept.append({"type": "text", "text": notice(total, cut, limit).lstrip("\n")})
    if not any(part["type"] == "image_url" for part in kept):
        return Cut(content="\n".join(part["text"] for part in kept), cut_bytes=cut)
    return Cut(content=kept, cut_bytes=cut)


def cut_text(text: str, limit: int | None) -> tuple[str, int]:
    """``text`` within ``limit`` bytes, with the notice when it was cut; the bytes cut."""
    if limit is None:
        return text, 0
    total = len(text.encode())
    if total <= limit:
        return text, 0
    kept = _prefix(text, limit)
    cut = total - len(kept.encode())
    return kept + notice(total, cut, limit), cut


def cut_content(content: Content, limit: int | None) -> Cut:
    """``content`` (a tool message's) within ``limit`` bytes, with the notice when it was cut.

    Example::

        cut_content("x" * 10, 4).content  # "xxxx\\n\\n[The tool's result was 10 bytes, ..."
    """
    if isinstance(content, str):
        text, cut = cut_text(content, limit)
        return Cut(content=text, cut_bytes=cut)
    if limit is None:
        return Cut(content=content)
    total = sum(_size(part) for part in content)
    if total <= limit:
        return Cut(content=content)
    return _cut_parts(content, limit, total)
