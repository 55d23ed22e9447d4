"""What input the package accepts: session ids, request keys, text, JSON shape and item counts.

One module holds every such rule, so that the HTTP edge, the executor and the stores refuse the
same things with the same words (README, "Reliability notes"):

- a **session id** is 1 to :data:`MAX_SESSION_ID_LENGTH` characters of text with no control
  character (U+0000–U+001F, U+007F–U+009F) and no lone surrogate. ``/`` is allowed: a
  sub-agent's session is ``"<parent>/<call id>"``;
- a **request key** (``add_context(key=...)``) follows the same rules, up to
  :data:`MAX_KEY_LENGTH` characters;
- **text** (a user's message, any string in a request body) must be valid Unicode: a lone
  surrogate (``"\\ud800"`` in JSON) cannot be stored as UTF-8, so it is refused before anything
  is written;
- a **request body** nests at most :data:`MAX_JSON_DEPTH` arrays and objects deep;
- one ``add_context`` call adds at most :data:`MAX_ITEMS_PER_CALL` items, and a session's queue
  holds at most :data:`MAX_QUEUED_ITEMS` undelivered items (stores take ``max_queued_items``).

A refused id or key is never echoed whole: :func:`show` cuts it to a few dozen characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from .errors import InvalidRequestError

__all__ = [
    "MAX_ITEMS_PER_CALL",
    "MAX_JSON_DEPTH",
    "MAX_KEY_LENGTH",
    "MAX_QUEUED_ITEMS",
    "MAX_SESSION_ID_LENGTH",
    "check_json",
    "check_key",
    "check_session_id",
    "check_text",
    "id_problem",
    "show",
    "text_problem",
    "too_deep",
]

MAX_SESSION_ID_LENGTH = 512
MAX_KEY_LENGTH = 256
MAX_JSON_DEPTH = 100
MAX_ITEMS_PER_CALL = 100
MAX_QUEUED_ITEMS = 1_000

# C0 and C1 control characters, DEL, and surrogates. A str only holds a surrogate code point
# when it is unpaired (JSON's "\ud83d\ude00" decodes to one astral character).
_FORBIDDEN_IN_ID = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SHOWN = 40


def show(value: str) -> str:
    """``repr(value)``, cut to a few dozen characters with the full length said.

    For messages that name an id or key a caller sent: a 1 MB id must not come back in a 404.
    """
    if len(value) <= _SHOWN:
        return repr(value)
    return f"{value[:_SHOWN]!r}… ({len(value)} characters)"


def _code_point(char: str) -> str:
    return f"U+{ord(char):04X}"


def text_problem(value: str) -> str | None:
    """What makes ``value`` unstorable text (a lone surrogate), or ``None``."""
    if value.isascii():
        return None
    found = _SURROGATE.search(value)
    if found is None:
        return None
    return f"contains a lone surrogate ({_code_point(found[0])} at position {found.start()})"


def id_problem(
    value: object, *, what: str = "session id", limit: int = MAX_SESSION_ID_LENGTH
) -> str | None:
    """What is wrong with ``value`` as a session id (or, with ``what`` and ``limit``, as a
    key), or ``None``."""
    if not isinstance(value, str):
        return f"the {what} must be a string, not {type(value).__name__}"
    if not value:
        return f"the {what} is empty"
    if len(value) > limit:
        return f"the {what} {show(value)} is longer than {limit} characters"
    found = _FORBIDDEN_IN_ID.search(value)
    if found is not None:
        kind = "a lone surrogate" if _SURROGATE.match(found[0]) else "a control character"
        return (
            f"the {what} {show(value)} contains {kind} ({_code_point(found[0])} at position "
            f"{found.start()}); use text without control characters"
        )
    return None


def check_session_id(value: object) -> str:
    """``value`` if it is a valid session id (see the module docstring).

    Raises:
        InvalidRequestError: it is not; the message shows at most a few dozen characters of it.
    """
    problem = id_problem(value)
    if problem is not None:
        raise InvalidRequestError(f"{problem}; nothing was written")
    assert isinstance(value, str)
    return value


def check_key(value: object) -> str | None:
    """``value`` if it is ``None`` or a valid request key (the session id rules, at most
    :data:`MAX_KEY_LENGTH` characters).

    Raises:
        InvalidRequestError: it is not.
    """
    if value is None:
        return None
    problem = id_problem(value, what="key", limit=MAX_KEY_LENGTH)
    if problem is not None:
        raise InvalidRequestError(f"{problem}; nothing was written")
    assert isinstance(value, str)
    return value


def check_text(value: str, *, what: str = "the text") -> str:
    """``value`` if it can be stored as UTF-8 (no lone surrogate). NUL is fine: every store keeps
    text inside JSON, where it is escaped.

    Raises:
        InvalidRequestError: it holds a lone surrogate.
    """
    problem = text_problem(value)
    if problem is not None:
        raise InvalidRequestError(f"{what} {problem}; send valid Unicode. Nothing was written")
    return value


def _walk(value: Any) -> Iterator[tuple[Any, tuple[Any, ...] | None, int]]:
    """Every node of a parsed JSON value with its depth and a link to its path (iteratively:
    the depth an attacker chooses must not become Python recursion)."""
    stack: list[tuple[Any, tuple[Any, ...] | None, int]] = [(value, None, 0)]
    while stack:
        node, path, depth = stack.pop()
        yield node, path, depth
        if isinstance(node, dict):
            stack.extend((v, (path, k), depth + 1) for k, v in node.items())
            stack.extend((k, (path, k), depth + 1) for k in node if isinstance(k, str))
        elif isinstance(node, list):
            stack.extend((v, (path, i), depth + 1) for i, v in enumerate(node))


def _dotted(path: tuple[Any, ...] | None) -> str:
    parts: list[str] = []
    while path is not None:
        path, key = path
        # A key is the client's text: shown escaped and cut, as an id is (it may be the very
        # string that holds the lone surrogate, which no response could encode).
        text = str(key)
        parts.append(text if text.isprintable() and len(text) <= _SHOWN else show(text))
    return ".".join(reversed(parts)) or "(body)"


def check_json(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a parsed JSON value nested deeper than ``max_depth`` or holding a lone surrogate.

    Raises:
        InvalidRequestError: the message names where (``messages.0.parts.0.text``).
    """
    for node, path, depth in _walk(value):
        if isinstance(node, str):
            problem = text_problem(node)
            if problem is not None:
                raise InvalidRequestError(
                    f"the string at {_dotted(path)} {problem}; send valid Unicode"
                )
        elif depth >= max_depth and isinstance(node, (dict, list)):
            raise too_deep(max_depth)


def too_deep(max_depth: int = MAX_JSON_DEPTH) -> InvalidRequestError:
    """The refusal of a request body nested more than ``max_depth`` levels deep."""
    return InvalidRequestError(
        f"the request body nests arrays and objects more than {max_depth} levels deep"
    )
