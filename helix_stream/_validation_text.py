"""The text of a pydantic validation error, as the package's error messages quote it
(:func:`describe_validation`; re-exported by :mod:`helix_stream.errors`)."""

from __future__ import annotations

from typing import Any

__all__ = ["describe_validation"]


def describe_validation(exc: Any, *, root: str = "(root)", skip: int = 0, limit: int = 5) -> str:
    """``"field.path: message; ..."`` for a pydantic ``ValidationError`` (at most ``limit``).

    Args:
        exc: The ValidationError.
        root: What to call a problem with the whole value.
        skip: Leading location parts to leave out (e.g. a union's tag).
        limit: Problems listed; the rest are counted.
    """
    errors = exc.errors()
    parts = [
        f"{'.'.join(str(p) for p in e['loc'][skip:]) or root}: {e['msg']}" for e in errors[:limit]
    ]
    more = len(errors) - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")
