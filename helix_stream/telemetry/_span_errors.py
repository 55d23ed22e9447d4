"""How an exception is recorded on a span: ``error.type``, a redacted ``exception`` event, the
error status; a cancellation or a closed generator is an ``helix.aborted`` marker instead.
"""

from __future__ import annotations

import asyncio
import traceback

from opentelemetry.trace import Span, Status, StatusCode

from ._filters import redact
from ._metrics import class_name, error_type

__all__ = ["record_error"]


def record_error(span: Span, exc: BaseException, secrets: set[str]) -> None:
    """Record ``exc`` on ``span``, its message and stack redacted of ``secrets``."""
    if isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
        # Cancelled, or closed by its consumer: an "aborted" marker, no stack. It is not
        # a failure of the operation (semconv "Recording errors" is about errors).
        span.set_attribute("helix.aborted", True)
        return
    message = redact(str(exc), secrets)
    stack = redact("".join(traceback.format_exception(exc)), secrets)
    span.set_attribute("error.type", error_type(exc))
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        span.set_attribute("helix.error.code", code)
    # By hand: the SDK's record_exception would put str(exc) on the span unredacted.
    exception = {
        "exception.type": class_name(exc),
        "exception.message": message,
        "exception.stacktrace": stack,
    }
    span.add_event("exception", exception)
    span.set_status(Status(StatusCode.ERROR, message))
