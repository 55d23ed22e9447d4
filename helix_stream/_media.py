"""Is a file what it says it is? The one rule for the files a user message carries.

A file whose declared type is not what its bytes are (a ``file`` part declared ``image/png``
whose ``data:`` URL says ``text/html``, or whose bytes are not a PNG) is refused by the
provider, and since a stored message is replayed on every later turn, it would fail every
later turn of its session too. So it is refused at the edge, before anything is written:

* the ``data:`` URL's own media type must be the declared one (a ``data:`` URL without one
  is ``text/plain``, as RFC 2397 says);
* an image's or a PDF's ``data:`` URL must be base64, and its bytes must begin as that type
  does: PNG, JPEG, GIF, WebP and PDF each have a signature;
* an ``https://`` URL is not fetched (the server never fetches a user-given URL), so its
  bytes are the provider's to check.

:func:`check_file` applies it; the chat server's parts (``server/_parts.py``) and
``Executor.run``'s input (an ``image_url`` content part's ``data:`` URL) both call it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from .errors import InvalidRequestError

__all__ = ["check_content", "check_file", "data_url_type", "media_type"]

_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "application/pdf": (b"%PDF-",),
}


def media_type(value: str) -> str:
    """A media type without its parameters, lowercased (``"Image/PNG; x=1"`` → ``image/png``)."""
    return value.split(";")[0].strip().lower()


def data_url_type(url: str) -> tuple[str, bool, str]:
    """A ``data:`` URL's media type, whether it is base64, and its data.

    Raises:
        InvalidRequestError: the URL has no ``,`` (it is not a data URL).
    """
    head, comma, data = url[len("data:") :].partition(",")
    if not comma:
        raise InvalidRequestError("its data: URL has no ',' before the data")
    params = [p.strip().lower() for p in head.split(";")]
    is_base64 = params[-1] == "base64"
    return (params[0] or "text/plain"), is_base64, data


def _signed(kind: str, data: bytes) -> bool:
    if kind == "image/webp":
        return data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    return data.startswith(_SIGNATURES[kind])


def check_file(declared: str | None, url: str, where: str, *, image: bool = False) -> None:
    """Refuse a file whose ``data:`` URL is not what is declared (see the module docstring).

    Args:
        declared: The declared media type (a ``file`` part's ``mediaType``), or ``None`` when
            only the URL says it.
        url: The file's URL; only a ``data:`` URL is checked.
        where: Names the part in the message (``"messages[2] part 1"``).
        image: The part is an image's (an ``image_url`` content part): the type must be one.

    Raises:
        InvalidRequestError: the types differ, the data is not base64, or the bytes are not
            of the type.
    """
    if not url.startswith("data:"):
        return
    try:
        in_url, is_base64, data = data_url_type(url)
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"{where}: {exc.message}") from None
    kind = media_type(declared) if declared is not None else in_url
    if image and not kind.startswith("image/"):
        raise InvalidRequestError(f"{where}: an image_url's data: URL says {in_url[:80]!r}")
    if in_url != kind:
        raise InvalidRequestError(
            f"{where}: the file is declared {kind[:80]!r} but its data: URL says "
            f"{in_url[:80]!r}; send the file with its own media type"
        )
    if kind not in _SIGNATURES and kind != "image/webp":
        return  # text types: any bytes are text
    if not is_base64:
        raise InvalidRequestError(f"{where}: a {kind} data: URL must be base64 (';base64,')")
    try:
        # All of it: a broken tail is refused by the provider as surely as a wrong head.
        content = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError(f"{where}: the {kind} data: URL is not valid base64") from None
    if not _signed(kind, content):
        raise InvalidRequestError(
            f"{where}: the file is declared {kind!r} but its bytes are not a {kind} file"
        )


def check_content(message: Mapping[str, Any], where: str) -> None:
    """Check the files of a message in litellm's content format (``Executor.run``'s input):
    an ``image_url`` part's ``data:`` URL must be an image of its type, a ``file`` part's
    ``file_data`` the declared ``format`` (see :func:`check_file`).

    Raises:
        InvalidRequestError: a file is not what it says (the message names the part).
    """
    content = message.get("content")
    if not isinstance(content, list):
        return
    for index, part in enumerate(content):
        if not isinstance(part, Mapping):
            continue
        at = f"{where} part {index}"
        if part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            if isinstance(url, str):
                check_file(None, url, at, image=True)
        elif part.get("type") == "file" and isinstance(part.get("file"), Mapping):
            file, declared = part["file"], part["file"].get("format")
            if isinstance(file.get("file_data"), str):
                kind = declared if isinstance(declared, str) else None
                check_file(kind, file["file_data"], at)
