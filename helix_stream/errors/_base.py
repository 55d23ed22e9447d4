"""The root of the error tree, ``HelixError``, and the text helpers every error uses."""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["ERROR_MASK", "HelixError", "describe_validation"]


# What a user sees of an error unless an ``on_error`` callback chooses other text: server
# internals (and a tool's exception text) must not leak to a chat UI.
ERROR_MASK = "An error occurred."


def describe_validation(exc: Any, *, root: str = "(root)", skip: int = 0, limit: int = 5) -> str:
    """``"field.path: message; ..."`` for a pydantic ``ValidationError`` (at most ``limit``).

    Args:
        exc: The ValidationError.
        root: What to call a problem with the whole value.
        skip: Leading location parts to leave out (e.g. a union's tag).
        limit: Problems listed; the rest are counted.

    Example::

        from pydantic import BaseModel, ValidationError

        class City(BaseModel):
            name: str

        try:
            City.model_validate({})
        except ValidationError as exc:
            assert describe_validation(exc) == "name: Field required"
    """
    errors = exc.errors()
    parts = [
        f"{'.'.join(str(p) for p in e['loc'][skip:]) or root}: {e['msg']}" for e in errors[:limit]
    ]
    more = len(errors) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


class HelixError(Exception):
    """Root of every error helix_stream raises.

    Attributes:
        code: A stable machine-readable code (``validation_error``, ...).
        http_status: The HTTP status a server should answer with.
        retryable: Whether the same call may succeed if simply tried again.
        message: What was wrong and what to do about it.

    Example::

        from helix_stream.errors import HelixError

        try:
            await executor.add_context("session-1", [hs.instruction("Answer in French.")])
        except HelixError as exc:                 # every error of the package
            body, status = exc.to_dict(), exc.http_status
            if exc.retryable:
                ...                               # the same call may succeed later
    """

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500
    retryable: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, object]:
        """The JSON body servers send: ``{"error": {"code", "message"}}``."""
        return {"error": {"code": self.code, "message": self.message}}
