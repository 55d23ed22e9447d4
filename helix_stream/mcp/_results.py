"""What a tool call's result becomes: the output the model reads (and the UI shows).

- ``isError: true``: a :class:`~helix_stream.errors.ToolFailedError` carrying the server's text,
  which the loop turns into an error result the model reads (not an exception of the run).
- ``structuredContent``, when present: that value (the text content mirrors it).
- Text only: the text (several blocks joined by newlines).
- Anything else: a list of OpenAI content parts, one per block, which the loop sends as the
  provider accepts them (``loop/_tool_media.py``: image blocks in the tool result on Anthropic
  and Bedrock, a following user message on OpenAI-compatible APIs). An image (PNG, JPEG, GIF or
  WebP whose bytes are what its type says) is an ``image_url`` part with its ``data:`` URL; a
  text resource is a text part (its URI, then its text); audio, a binary resource, an image of
  another type and a resource link are a text part describing them (MIME type and size, or the
  link's URI and name), since no provider takes them in a tool result. Without an image the
  parts are joined into the tool message's text.
"""

from __future__ import annotations

import json
from typing import Any

from .._media import check_file
from ..errors import InvalidRequestError, ToolFailedError

__all__ = ["tool_output"]

# The image types every family that takes images accepts (OpenAI, Anthropic, Bedrock, Gemini).
_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def _size(data: str) -> int:
    """The decoded size of base64 ``data`` (without decoding it)."""
    data = data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _described(description: dict[str, Any]) -> dict[str, Any]:
    """A block no provider takes in a tool result, as a text part describing it."""
    return _text(json.dumps(description))


def _image(block: Any) -> dict[str, Any]:
    kind = str(block.mime_type).lower()
    url = f"data:{kind};base64,{block.data}"
    try:
        if kind not in _IMAGE_TYPES:
            raise InvalidRequestError(kind)
        check_file(kind, url, "an MCP image", image=True)
    except InvalidRequestError:  # not an image a provider takes: described, as audio is
        return _described({"type": "image", "mime_type": kind, "size_bytes": _size(block.data)})
    return {"type": "image_url", "image_url": {"url": url}}


def _resource(resource: Any) -> dict[str, Any]:
    uri = str(resource.uri)
    if getattr(resource, "text", None) is not None:
        return _text(f"{uri}\n{resource.text}")
    part: dict[str, Any] = {"type": "resource", "uri": uri}
    if resource.mime_type:
        part["mime_type"] = resource.mime_type
    return _described(part | {"size_bytes": _size(resource.blob)})


def _part(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return _text(block.text)
    if kind == "image":
        return _image(block)
    if kind == "audio":
        return _described(
            {"type": kind, "mime_type": block.mime_type, "size_bytes": _size(block.data)}
        )
    if kind == "resource":
        return _resource(block.resource)
    if kind == "resource_link":
        link = {"type": "resource_link", "uri": str(block.uri), "name": block.name}
        return _described(link | ({"mime_type": block.mime_type} if block.mime_type else {}))
    return _described({"type": str(kind)})


def _joined(blocks: list[Any]) -> str:
    return "\n".join(block.text for block in blocks if getattr(block, "type", None) == "text")


def tool_output(result: Any) -> Any:
    """The output of a ``CallToolResult`` (see the module docstring).

    Raises:
        ToolFailedError: the result is an error (``isError``).
    """
    blocks = list(result.content or [])
    if result.is_error:
        text = _joined(blocks) or "the tool reported an error without text"
        raise ToolFailedError(text, error_type="tool_error")
    if result.structured_content is not None:
        return result.structured_content
    if all(getattr(block, "type", None) == "text" for block in blocks):
        return _joined(blocks)
    return [_part(block) for block in blocks]
