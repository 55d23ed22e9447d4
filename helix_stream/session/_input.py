"""A turn's input: the user's new message, checked before anything is written.

This module owns the shapes a user message may come in (a string, or a message dict with
the ``user`` or ``system`` role) and their checks (strict JSON text, files that are what they
say), for every way a message enters a session: a turn (``Executor.run``), a steered message
(``Executor.steer``), a queued one (``Executor.queue``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._limits import check_json
from .._media import check_content
from ..errors import InvalidRequestError

__all__ = ["Input", "checked_input"]

Input = str | Mapping[str, Any] | None


def _input_message(value: Input) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"role": "user", "content": value}
    if (
        isinstance(value, Mapping)
        and value.get("role") in ("user", "system")
        and "content" in value
    ):
        return dict(value)
    raise InvalidRequestError(
        "input must be a string or a message like {'role': 'user', 'content': '...'}"
    )


def checked_input(value: Input) -> dict[str, Any]:
    """``value`` as the message dict stored; refused (nothing written) when it is not one.

    Raises:
        InvalidRequestError: a wrong shape, invalid text (a lone surrogate, absurd nesting),
            or a file content part that is not what it says.
    """
    message = _input_message(value)
    if message is None:
        raise InvalidRequestError("a message is needed: send the user's text")
    check_json(message)  # no lone surrogate, no absurd nesting: refused before writing
    check_content(message, "input")  # a file that is not what it says (README)
    return message
