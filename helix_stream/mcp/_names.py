"""Tool names: what an MCP server calls a tool, and what the model is offered.

Providers limit tool names: OpenAI and Anthropic to ``^[a-zA-Z0-9_-]{1,64}$``, Gemini also
wants a letter or ``_`` first. MCP allows more (dots, slashes, 128 characters). So the offered
name is ``{prefix}__{tool}``: the server's prefix, two underscores (a dot, as in
``github.search_issues``, is refused by OpenAI), and the tool's name with every other
character replaced by ``_``. A name still too long keeps its first characters and ends in a
digest of the original; two tools whose names would collide both get one. The rule is pure and
applied once, when an offer is made: the offer stores both names, so a call always reaches the
tool the model was offered.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable

from ..errors import InvalidRequestError

__all__ = ["SEPARATOR", "check_server_name", "offered_names"]

SEPARATOR = "__"
MAX_NAME = 64
_SERVER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*")
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST = 8


def check_server_name(name: object, *, what: str = "name") -> str:
    """``name`` if it can name a server (and prefix its tools), else raise.

    A letter first, then letters, digits, ``-`` and single ``_``, at most 32 characters: it
    starts every tool name, keys ``tools_context`` and cannot hold the separator.

    Raises:
        InvalidRequestError: naming what is wrong.
    """
    if not isinstance(name, str) or len(name) > 32 or not _SERVER_NAME.fullmatch(name):
        raise InvalidRequestError(
            f"MCP server {what} {name!r} must start with a letter and hold only letters, "
            "digits, '-' and single '_' (at most 32 characters): it prefixes the server's "
            "tool names and keys its tools_context entry"
        )
    return name


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:_DIGEST]


def _plain(prefix: str, remote: str) -> str:
    head = f"{prefix}{SEPARATOR}" if prefix else ""
    name = head + _NOT_ALLOWED.sub("_", remote)
    if not prefix and not re.match(r"[A-Za-z_]", name):
        name = "_" + name  # Gemini: a letter or "_" first
    return name


def _with_digest(name: str, remote: str) -> str:
    return f"{name[: MAX_NAME - _DIGEST - 1]}_{_digest(remote)}"


def offered_names(prefix: str, remote_names: Iterable[str]) -> dict[str, str]:
    """``{remote name: offered name}`` for a server's tools (see the module docstring).

    Deterministic: the result depends on the set of names only, not on their order.
    """
    remote = sorted(set(remote_names))
    plain = {name: _plain(prefix, name) for name in remote}
    counts = Counter(plain.values())
    out: dict[str, str] = {}
    for name in remote:
        offered = plain[name]
        if counts[offered] > 1 or len(offered) > MAX_NAME:
            offered = _with_digest(offered, name)
        out[name] = offered
    if len(set(out.values())) < len(out):  # a digest equal to another tool's plain name
        taken = sorted(n for n, c in Counter(out.values()).items() if c > 1)
        raise InvalidRequestError(f"MCP tool names collide after mapping: {taken}")
    return out
