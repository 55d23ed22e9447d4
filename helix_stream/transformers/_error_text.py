"""The error text a UI client sees: masked unless the server's ``on_error`` says otherwise.

Owned here: :class:`ErrorMask`, the one place that turns an exception into the ``errorText`` of
an ``error`` or ``tool-output-error`` UI chunk. Without an ``on_error`` hook a client sees
:data:`~helix_stream.errors.ERROR_MASK` (an exception's text may hold what a user must not
see); a hook that raises or returns no string also yields the mask.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from helix_stream.errors import ERROR_MASK

__all__ = ["ErrorMask"]

logger = logging.getLogger("helix_stream.transformers")


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorMask:
    """Turns an exception into the text a client is shown (see the module docstring).

    Example:
        >>> ErrorMask(on_error=None).text(ValueError("db password is hunter2")) == ERROR_MASK
        True
        >>> ErrorMask(on_error=str).text(ValueError("try again"))
        'try again'
    """

    on_error: Callable[[BaseException], str] | None

    def text(self, exc: BaseException) -> str:
        """The ``errorText`` for ``exc``."""
        if self.on_error is None:
            return ERROR_MASK
        try:
            text = self.on_error(exc)
        except Exception:
            logger.exception("on_error raised; sending the masked error text")
            return ERROR_MASK
        return text if isinstance(text, str) else ERROR_MASK
