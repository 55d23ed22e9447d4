"""What a tool's images become: its tool message, and the request each provider is sent.

A tool whose output is a list of OpenAI content parts (``{"type": "text", "text": ...}`` and
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``; an MCP tool's
result with an image is one, ``mcp/_results.py``) answers with those parts:

* **The tool message keeps them** (:func:`tool_content`): its ``content`` is the list of parts,
  the images as ``data:`` URLs, which is how a session's log stores a user's uploaded images
  too. Parts without an image are joined into the message's text.
* **Each provider is sent the form it accepts** (:func:`render_tool_media`). Anthropic's and
  Bedrock's tool results take image blocks, and litellm turns ``image_url`` parts of a tool
  message into them: the message goes as it is. OpenAI's chat API (and the other families)
  takes text only in a tool message: there the tool message carries its text, with a line per
  image saying where it went, and one user message after the step's tool messages carries the
  images, introduced as the output of the tool call (not the user's words).

Both are pure functions of the stored message, so a message renders to the same bytes on every
later request and the prompt cache keeps the prefix (README, "Tools from MCP servers").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..models._family import Family, params_family
from ..tools import dump_output

__all__ = ["ToolContent", "render_tool_media", "tool_content", "with_tool_media"]

ToolContent = str | list[dict[str, Any]]
"""A tool message's content: text, or content parts when the tool returned an image."""

_PART_TYPES = frozenset({"text", "image_url"})
# Families whose tool results take images (litellm converts the tool message's image_url
# parts into the tool result's image blocks).
_IMAGES_IN_TOOL_RESULT: frozenset[Family] = frozenset({"anthropic", "bedrock"})


def _content_parts(output: Any) -> list[dict[str, Any]] | None:
    """``output`` as content parts, or ``None`` when it is not a list of them."""
    if not isinstance(output, list) or not output:
        return None
    if all(isinstance(part, dict) and part.get("type") in _PART_TYPES for part in output):
        return [dict(part) for part in output]
    return None


def tool_content(output: Any) -> ToolContent:
    """A tool's output as its tool message's content (see the module docstring)."""
    parts = _content_parts(output)
    if parts is None:
        return dump_output(output)
    if any(part["type"] == "image_url" for part in parts):
        return parts
    return "\n".join(str(part.get("text", "")) for part in parts)


def _has_media(messages: Sequence[Mapping[str, Any]]) -> bool:
    return any(m.get("role") == "tool" and isinstance(m.get("content"), list) for m in messages)


def _split(call_id: str, parts: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """A tool message's parts as its text (a line per image) and its images."""
    lines: list[str] = []
    images: list[dict[str, Any]] = []
    for part in parts:
        if part.get("type") == "image_url":
            images.append({"type": "image_url", "image_url": part["image_url"]})
            lines.append(f"[image {len(images)}: in the next user message, from call {call_id}]")
        else:
            lines.append(str(part.get("text", "")))
    return "\n".join(lines), images


def _images_message(images: list[tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for call_id, parts in images:
        intro = f"The images tool call {call_id} returned (the tool's output, not the user's):"
        content.append({"type": "text", "text": intro})
        content.extend(parts)
    return {"role": "user", "content": content}


def render_tool_media(
    messages: Sequence[Mapping[str, Any]], family: Family
) -> list[dict[str, Any]]:
    """``messages`` as a ``family`` provider takes tool images (see the module docstring).

    Example::

        render_tool_media(messages, "openai")     # tool text, then a user message of images
    """
    if family in _IMAGES_IN_TOOL_RESULT or not _has_media(messages):
        return [dict(m) for m in messages]
    out: list[dict[str, Any]] = []
    waiting: list[tuple[str, list[dict[str, Any]]]] = []  # until the step's tool messages end
    for message in messages:
        is_tool = message.get("role") == "tool"
        if waiting and not is_tool:
            out.append(_images_message(waiting))
            waiting = []
        content = message.get("content")
        if is_tool and isinstance(content, list):
            call_id = str(message.get("tool_call_id", ""))
            text, images = _split(call_id, content)
            out.append({**message, "content": text})
            if images:
                waiting.append((call_id, images))
        else:
            out.append(dict(message))
    if waiting:
        out.append(_images_message(waiting))
    return out


async def with_tool_media(params: dict[str, Any]) -> dict[str, Any]:
    """The request's ``params`` with its tool images in the form its provider takes."""
    messages = params.get("messages") or []
    if not _has_media(messages):
        return params
    family = await params_family(str(params.get("model", "")), params)
    return {**params, "messages": render_tool_media(messages, family)}
