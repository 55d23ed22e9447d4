"""What a tool call's result becomes: the output the model reads (and the UI shows).

- ``isError: true``: a :class:`~helix_stream.errors.ToolFailedError` carrying the server's text,
  which the loop turns into an error result the model reads (not an exception of the run).
- ``structuredContent``, when present: that value (the text content mirrors it).
- Text only: the text (several blocks joined by newlines).
- Anything else: a list of parts, one per block. Text parts and text resources keep their
  text. Images, audio and binary resources keep their MIME type and size but **not their
  bytes**: a tool result reaches the provider as the tool message's text, which is all every
  provider accepts there (OpenAI's chat API takes no image in a tool message), and base64 in
  that text would cost a token per few bytes without the model seeing a picture. A resource
  link keeps its URI and name.
"""

from __future__ import annotations

from typing import Any

from ..errors import ToolFailedError

__all__ = ["tool_output"]


def _size(data: str) -> int:
    """The decoded size of base64 ``data`` (without decoding it)."""
    data = data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def _part(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind in ("image", "audio"):
        return {"type": kind, "mime_type": block.mime_type, "size_bytes": _size(block.data)}
    if kind == "resource":
        resource = block.resource
        part: dict[str, Any] = {"type": "resource", "uri": str(resource.uri)}
        if resource.mime_type:
            part["mime_type"] = resource.mime_type
        if getattr(resource, "text", None) is not None:
            part["text"] = resource.text
        else:
            part["size_bytes"] = _size(resource.blob)
        return part
    if kind == "resource_link":
        link = {"type": "resource_link", "uri": str(block.uri), "name": block.name}
        return link | ({"mime_type": block.mime_type} if block.mime_type else {})
    return {"type": str(kind)}


def _text(blocks: list[Any]) -> str:
    return "\n".join(block.text for block in blocks if getattr(block, "type", None) == "text")


def tool_output(result: Any) -> Any:
    """The output of a ``CallToolResult`` (see the module docstring).

    Raises:
        ToolFailedError: the result is an error (``isError``).
    """
    blocks = list(result.content or [])
    if result.is_error:
        text = _text(blocks) or "the tool reported an error without text"
        raise ToolFailedError(text, error_type="tool_error")
    if result.structured_content is not None:
        return result.structured_content
    if all(getattr(block, "type", None) == "text" for block in blocks):
        return _text(blocks)
    return [_part(block) for block in blocks]
