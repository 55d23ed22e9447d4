"""The one retry policy of a model call: which failures are tried again, when, and how often.

A step's model call is retried here only while nothing of it has been emitted: :func:`open_stream`
makes the call and waits for the stream's first chunk; a failure up to there is retried if it
is retryable (a 429, a 5xx, a timeout, a lost connection — the translated error's
``retryable``), after an exponential backoff with jitter, or after the provider's
``Retry-After``. Once the first chunk is in hand the stream is the caller's, and a failure
after it is not retried here: text already shown would be repeated. The loop's
``stream_retries`` (``helix_stream/loop/_stream_retry.py``) retries such a failure by the same
rule (:func:`retry_delay`), continuing the shown text or redoing the step.

The retries underneath are switched off (litellm's, a Router's, the OpenAI client's: see
``NO_INNER_RETRIES``), so that ``max_retries=2`` means at most three requests, whatever the
provider or the path.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import InvalidRequestError, ModelError, NoActiveContextError
from ..state import current_session
from ._params import check_params

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "LOG_SESSION",
    "Attempt",
    "Guard",
    "RetryPolicy",
    "open_content_stream",
    "open_stream",
    "retry_after",
    "retry_delay",
]

logger = logging.getLogger("helix_stream.models")

DEFAULT_MAX_RETRIES = 2  # as the AI SDK's maxRetries

LOG_SESSION: ContextVar[str | None] = ContextVar("helix_stream_log_session", default=None)
"""The session a model call runs for, named in its log lines when no session scope is bound
(the chat server sets it for the turns it serves)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How a model call is retried before its first chunk.

    Attributes:
        max_retries: Retries after the first attempt (0: one attempt only).
        initial_delay: Seconds before the first retry; each next one waits ``backoff`` times
            longer (2 s, 4 s, ... as the AI SDK), less a random part of up to ``jitter``.
        backoff: The factor between two delays.
        jitter: The share of each delay drawn at random (0.5: between half and all of it), so
            that clients rate-limited together do not all come back at once.
        max_delay: The longest wait. A ``Retry-After`` longer than this ends the retries: a
            retry sooner than the provider asks would only fail again.

    Raises:
        InvalidRequestError: a negative or non-integer ``max_retries``, a negative delay.
    """

    max_retries: int = DEFAULT_MAX_RETRIES
    initial_delay: float = 2.0
    backoff: float = 2.0
    jitter: float = 0.5
    max_delay: float = 60.0

    def __post_init__(self) -> None:
        if (
            not isinstance(self.max_retries, int)
            or isinstance(self.max_retries, bool)
            or self.max_retries < 0
        ):
            raise InvalidRequestError(
                f"max_retries must be an integer of 0 or more, not {self.max_retries!r}."
            )
        if self.initial_delay < 0 or self.max_delay < 0 or self.backoff < 1:
            raise InvalidRequestError("retry delays must be >= 0 and backoff >= 1.")
        if not 0 <= self.jitter <= 1:
            raise InvalidRequestError("jitter must be between 0 and 1.")

    def delay(self, retry: int, error: BaseException) -> float | None:
        """Seconds to wait before retry number ``retry`` (1-based); ``None``: do not retry."""
        asked = retry_after(error)
        if asked is not None:
            # The provider's word, never shortened; a little later spreads the herd.
            return None if asked > self.max_delay else asked * (1 + 0.1 * random.random())
        base = min(self.max_delay, self.initial_delay * self.backoff ** (retry - 1))
        return base * (1 - self.jitter * random.random())


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempt:
    """One failed attempt of a model call (what telemetry records for it).

    Attributes:
        number: The attempt that failed (1 for the first request).
        error: Its error (translated).
        delay: Seconds until the next attempt, or ``None`` when there is none (the error is
            not retryable, the retries are used up, or ``Retry-After`` asks too long).
        elapsed: Seconds the attempt took until it failed.
        after_text: It failed after text had streamed (a ``stream_retries`` retry).
    """

    number: int
    error: BaseException
    delay: float | None
    elapsed: float
    after_text: bool = False

    @property
    def will_retry(self) -> bool:
        return self.delay is not None


def is_retryable(error: BaseException) -> bool:
    """A provider failure that may pass if tried again (429, 5xx, timeout, connection)."""
    return isinstance(error, ModelError) and error.retryable


OnAttempt = Callable[[Attempt], None]
Send = Callable[[dict[str, Any]], Awaitable[Any]]
BeforeRetry = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class Guard(Protocol):
    """The timer of a model call's time limits (``helix_stream._timeout.StreamTimer``):
    told of each attempt and of each wait on the provider, it turns its own cancellation of
    a wait into a :class:`~helix_stream.errors.ModelTimeoutError`."""

    waiting: bool

    def attempt(self) -> None: ...

    def timed_out(self, exc: BaseException) -> BaseException | None: ...


async def open_stream(
    send: Send,
    params: Mapping[str, Any],
    policy: RetryPolicy | None = None,
    **options: Any,
) -> tuple[Any | None, AsyncIterator[Any]]:
    """Open a step's model stream: call, wait for the first chunk, retry before it.

    :func:`open_content_stream` with every chunk counted as content: returns ``(first,
    stream)``, the first chunk (``None`` if the stream ended without any) and the stream,
    positioned after it.
    """
    prefix, stream = await open_content_stream(send, params, policy, **options)
    return (prefix[0] if prefix else None), stream


async def open_content_stream(
    send: Send,
    params: Mapping[str, Any],
    policy: RetryPolicy | None = None,
    *,
    on_attempt: OnAttempt | None = None,
    where: str = "stream_text",
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    before_retry: BeforeRetry | None = None,
    is_content: Callable[[Any], bool] | None = None,
    guard: Guard | None = None,
) -> tuple[list[Any], AsyncIterator[Any]]:
    """Open a step's model stream: call, wait for its first content, retry before it.

    Args:
        send: Makes the call with the given params and returns litellm's stream (in the loop:
            the model middleware around :func:`helix_stream.models._litellm.acompletion`,
            with the step's Router). Its errors should be translated already; any other
            error is translated here.
        params: The step's litellm params. ``num_retries=0`` and ``max_retries=0`` are added,
            so that litellm, a Router and the OpenAI client do not retry underneath.
        policy: The retry policy (default: 2 retries).
        on_attempt: Called for each failed attempt, before the wait (telemetry).
        where: Where the params came from, for the message of a refused argument.
        sleep: The wait (a test may record the delays instead).
        before_retry: Called after the wait, before each retried attempt, with the request;
            returns the request to send (a session commits the context that came meanwhile
            and appends its rows: the context pass runs before every model call).
        is_content: Whether a chunk carries content: chunks are read until one does (or
            the stream ends) before the stream is the caller's. Default: the first chunk.
        guard: The call's time limits (a ``first_chunk`` timeout is retried, a ``step`` or
            ``total`` one is not).

    Returns:
        ``(prefix, stream)``: the chunks read, up to and with the first content-bearing
        one, and the stream positioned after them. The caller iterates and closes the
        stream; an error from it is never retried.

    Raises:
        InvalidRequestError: an argument cannot be sent (before any request; see
            :func:`~helix_stream.models._params.check_params`).
        ModelError: the last attempt's error (an error that is not retryable at once).
    """
    from ._litellm import NO_INNER_RETRIES, ensure_litellm, is_litellm_param, translate_error

    await ensure_litellm()
    check_params(params, where=where, is_litellm_param=is_litellm_param)
    policy = policy or RetryPolicy()
    request = {**params, **NO_INNER_RETRIES}
    number = 0
    while True:
        number += 1
        started = time.perf_counter()
        try:
            return await _open_once(send, request, is_content, guard)
        except Exception as exc:
            error = translate_error(exc)
            if error is not exc:
                error.__cause__ = exc
            delay = retry_delay(policy, number, error)
            attempt = Attempt(
                number=number, error=error, delay=delay, elapsed=time.perf_counter() - started
            )
            _log_attempt(attempt)
            if on_attempt is not None:
                on_attempt(attempt)
            if delay is None:
                if error is exc:
                    raise
                raise error from exc
            await sleep(delay)
            if before_retry is not None:
                request = await before_retry(request)


async def _open_once(
    send: Send,
    request: dict[str, Any],
    is_content: Callable[[Any], bool] | None,
    guard: Guard | None,
) -> tuple[list[Any], AsyncIterator[Any]]:
    """One attempt: the request, then chunks up to the first content-bearing one."""
    stream: Any = None
    prefix: list[Any] = []
    try:
        if guard is not None:
            guard.attempt()
            guard.waiting = True
        stream = await send(dict(request))
        iterator = stream.__aiter__()
        while True:
            try:
                raw = await iterator.__anext__()
            except StopAsyncIteration:
                return prefix, iterator
            prefix.append(raw)
            if is_content is None or is_content(raw):
                return prefix, iterator
    except BaseException as exc:
        # This attempt's first_chunk, its step or the total (taken before the close: the
        # task must not stay cancelled while the stream closes).
        timed_out = guard.timed_out(exc) if guard is not None else None
        await _close(stream)
        if timed_out is not None:
            raise timed_out from None
        raise
    finally:
        if guard is not None:
            guard.waiting = False


def _log_attempt(attempt: Attempt) -> None:
    """One WARNING line per failed attempt, with the session it ran for (no error text: a
    provider may echo what it was sent)."""
    try:
        session_id: str | None = current_session().id
    except NoActiveContextError:
        session_id = LOG_SESSION.get()
    then = f"retrying in {attempt.delay:.1f} s" if attempt.delay is not None else "no retry"
    logger.warning(
        "session %r: model call attempt %d failed after %.1f s: %s (%s); %s",
        session_id,
        attempt.number,
        attempt.elapsed,
        type(attempt.error).__name__,
        getattr(attempt.error, "code", "-"),
        then,
        extra={"event": "core.model.attempt_failed", "session_id": session_id},
    )


def retry_delay(policy: RetryPolicy, number: int, error: BaseException) -> float | None:
    """Seconds before retrying attempt ``number`` (1-based) that failed with ``error``;
    ``None``: no retry (the one rule, before the first chunk and after text alike: a
    retryable error, retries left, no ``step``/``total`` limit hit, no ``Retry-After`` longer
    than the policy waits)."""
    if number > policy.max_retries or not is_retryable(error):
        return None
    if getattr(error, "limit", None) in ("step", "total"):
        return None  # a limit over all attempts: another one would exceed it too
    return policy.delay(number, error)


async def _close(stream: Any) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        # The attempt already failed; how its stream ends does not matter.
        with contextlib.suppress(Exception):
            await close()


def retry_after(error: BaseException) -> float | None:
    """The seconds a provider asked to wait (``retry-after-ms`` or ``Retry-After``), if any.

    Read from the response headers litellm keeps on its exception (``litellm_response_headers``,
    ``response.headers``), found on ``error`` or the exceptions it was raised from.
    """
    for exc in _chain(error):
        for headers in _header_sources(exc):
            seconds = _parse_retry_after(headers)
            if seconds is not None:
                return seconds
    return None


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < 8:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _header_sources(exc: BaseException) -> Iterator[Any]:
    for headers in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        if headers:
            yield headers


def _parse_retry_after(headers: Any) -> float | None:
    try:
        items = headers.items() if isinstance(headers, Mapping) else headers.multi_items()
    except AttributeError:
        return None
    values = {str(k).lower(): str(v) for k, v in items}
    ms = values.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    text = values.get("retry-after")
    if text is None:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:  # an HTTP date
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
