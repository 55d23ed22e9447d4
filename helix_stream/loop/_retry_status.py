"""The status a retried model call shows while nothing has come yet: the ``data-retry`` part.

A model call that fails before its first content (no content within ``first_chunk``, a 429, a
5xx, a lost connection) is retried after a backoff (``max_retries``). Without a word the chat
shows "Thinking…" all that while. So each failed attempt that will be retried yields, at once
and before the wait, one transient part (never stored with the message)::

    {"type": "data-retry", "transient": true, "data": {
        "attempt": 2, "attempts": 3,            # the attempt about to be made, and the most
        "reason": "no_answer",                  # nothing came in time (first_chunk); else "error"
        "code": "model_timeout", "delay": 1.7,  # the failure's code; seconds until the attempt
        "message": "The model has not answered yet; trying again (attempt 2 of 3)."}}

:func:`opening` runs the call's opening — a coroutine that makes the attempts and waits
between them — **in the current task**, handing out the parts as they come. It must be this
task: the timer of the call's time limits cancels the task that waits on the provider.
"""

from __future__ import annotations

import types
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator
from typing import Any, TypeVar

from ..chunks import DataChunk

__all__ = ["opening", "retry_status"]

T = TypeVar("T")


def retry_status(number: int, attempts: int, error: BaseException, delay: float) -> DataChunk:
    """The part for attempt ``number`` (1-based) that failed with ``error`` and is retried
    after ``delay`` seconds, of at most ``attempts``."""
    silent = getattr(error, "limit", None) == "first_chunk"
    code = getattr(error, "code", None) or type(error).__name__
    next_attempt = number + 1
    if silent:
        message = (
            f"The model has not answered yet; trying again (attempt {next_attempt} of {attempts})."
        )
    else:
        message = (
            f"The model's provider failed ({code}); trying again in {delay:.0f} s "
            f"(attempt {next_attempt} of {attempts})."
        )
    data = {
        "attempt": next_attempt,
        "attempts": attempts,
        "reason": "no_answer" if silent else "error",
        "code": code,
        "delay": round(delay, 1),
        "message": message,
    }
    return DataChunk(name="retry", data=data, transient=True)


@types.coroutine
def _suspend(signal: Any) -> Generator[Any, Any, Any]:
    """Pass what the inner coroutine waits on up to the task, and what the task sends back."""
    return (yield signal)


async def opening(
    coro: Coroutine[Any, Any, T], pending: list[DataChunk], done: Callable[[T], None]
) -> AsyncGenerator[DataChunk, None]:
    """Run ``coro`` in this task; yield each part put in ``pending`` as soon as ``coro`` waits.

    ``done`` gets ``coro``'s result; its exception propagates. A cancellation of this task
    reaches ``coro`` where it waits, as if it were awaited directly.
    """
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                signal = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                done(stop.value)
                return
            value, error = None, None
            while pending:
                yield pending.pop(0)
            try:
                value = await _suspend(signal)
            except BaseException as exc:  # a cancellation above all: it is coro's
                error = exc
    finally:
        coro.close()  # left between two parts (the consumer closed the stream): end it there
