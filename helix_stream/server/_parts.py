"""A user message's UI parts (text and files) as the model's content parts.

This module owns the mapping from the AI SDK's ``UIMessage`` parts that a user sends to
litellm's OpenAI-format content, and the rule for what can be carried:

* ``text`` parts → ``{"type": "text", "text": ...}`` (a message of text alone stays a string);
* ``file`` parts with an image media type (PNG, JPEG, GIF, WebP) →
  ``{"type": "image_url", "image_url": {"url": ...}}``;
* ``file`` parts with a document media type (PDF, plain text, Markdown, CSV) → litellm's
  ``{"type": "file", "file": {...}}``: a ``data:`` URL as ``file_data``, an ``https:`` URL as
  ``file_id`` (litellm passes URLs on to providers that fetch them);
* anything else — another media type, a URL that is neither ``data:`` nor ``https:`` — is
  refused with a 400 that names it: nothing is ever dropped silently;
* a ``data:`` URL must be what its part declares (its media type, and an image's or a PDF's
  bytes: :func:`helix_stream._media.check_file`), else a 400 naming the part.

Other part types a client may send along (``step-start``, ``reasoning``, ``source-url``, data
parts) carry nothing for the model and are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._media import check_file, media_type as bare_type
from ..errors import InvalidRequestError

__all__ = ["DOCUMENT_TYPES", "IMAGE_TYPES", "user_content"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
DOCUMENT_TYPES = frozenset({"application/pdf", "text/plain", "text/markdown", "text/csv"})


def _file_part(part: Mapping[str, Any], where: str) -> dict[str, Any]:
    media_type, url = part.get("mediaType"), part.get("url")
    if not isinstance(media_type, str) or not isinstance(url, str):
        raise InvalidRequestError(f"{where}: a file part needs string mediaType and url")
    media_type = bare_type(media_type)
    if not url.startswith(("data:", "https://")):
        raise InvalidRequestError(
            f"{where}: the file's url must be a data: URL or an https:// URL, not "
            f"{url.split(':', 1)[0][:20]!r}"
        )
    if media_type in IMAGE_TYPES or media_type in DOCUMENT_TYPES:
        check_file(media_type, url, where)
    if media_type in IMAGE_TYPES:
        return {"type": "image_url", "image_url": {"url": url}}
    if media_type in DOCUMENT_TYPES:
        file: dict[str, Any] = {"format": media_type}
        file["file_data" if url.startswith("data:") else "file_id"] = url
        if isinstance(part.get("filename"), str):
            file["filename"] = part["filename"]
        return {"type": "file", "file": file}
    carried = ", ".join(sorted(IMAGE_TYPES | DOCUMENT_TYPES))
    raise InvalidRequestError(
        f"{where}: files of media type {media_type[:80]!r} cannot be sent to the model; "
        f"send one of: {carried}"
    )


def user_content(
    parts: Sequence[Mapping[str, Any]], where: str
) -> tuple[str | list[dict[str, Any]], list[dict[str, Any]]]:
    """The model content of a user message's parts, and the parts to store with it.

    Returns:
        ``(content, stored_parts)``: ``content`` is a string when the message is text alone,
        else a list of content parts; ``stored_parts`` are the text and file UI parts as the
        user sent them (what ``GET .../messages`` gives back).

    Raises:
        InvalidRequestError: no text and no file, a malformed part, or a file the mapping
            cannot carry (the message names it).
    """
    content: list[dict[str, Any]] = []
    stored: list[dict[str, Any]] = []
    for index, part in enumerate(parts):
        kind = part.get("type")
        if kind == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise InvalidRequestError(f"{where} part {index}: a text part needs a string text")
            content.append({"type": "text", "text": text})
            stored.append({"type": "text", "text": text})
        elif kind == "file":
            content.append(_file_part(part, f"{where} part {index}"))
            stored.append(
                {k: part[k] for k in ("type", "mediaType", "url", "filename") if k in part}
            )
    if not content:
        kinds = sorted({str(p.get("type")) for p in parts})
        raise InvalidRequestError(
            f"{where} has no text or file part (parts: {', '.join(kinds) or 'none'})"
        )
    if all(c["type"] == "text" for c in content):
        return "".join(c["text"] for c in content), stored
    return content, stored
