"""litellm's exceptions into the package's error tree (:func:`translate`, behind
:func:`helix_stream.models._litellm.translate_error`, which gives it the loaded litellm's
``exceptions``): the one table of cases, and the combined classes that are both a helix error
and litellm's.
"""

from __future__ import annotations

from typing import Any

from .. import errors
from ..telemetry._filters import redact

__all__ = ["translate"]


def translate(exc: BaseException, lx: Any, *, secrets: set[str] | None = None) -> BaseException:
    """:func:`helix_stream.models._litellm.translate_error` once litellm is loaded; ``lx`` is
    ``litellm.exceptions``."""
    if isinstance(exc, errors.HelixError):
        if type(exc) is errors.ModelTimeoutError:  # a timeout= limit of the loop
            return _as_litellm(exc, None, lx)
        return exc
    import httpx
    import openai  # loaded with litellm

    if isinstance(exc, httpx.TimeoutException):  # read directly from the body (_direct_stream)
        timed_out = errors.ModelTimeoutError(f"{type(exc).__name__}: {exc or 'timed out'}")
        return _as_litellm(timed_out, None, lx)
    inner = getattr(exc, "original_exception", None)
    if isinstance(exc, lx.MidStreamFallbackError) and isinstance(inner, openai.OpenAIError):
        # litellm wraps an error met while streaming, whatever it was (a rate limit, a
        # refusal): the provider's own error says what happened.
        return translate(inner, lx, secrets=secrets)
    unreadable = _unreadable(exc, _unrecognised(lx))
    if unreadable is not None and not _local_cause_of_json(unreadable):
        text = f"{type(unreadable).__name__}: {unreadable}"
        unread = errors.ModelError(
            "litellm could not read the provider's answer "
            f"({redact(text, secrets) if secrets else text}). The answer has a shape litellm "
            "does not know; trying again would only repeat it."
        )
        return _as_litellm(unread, exc, lx)
    if not isinstance(exc, openai.OpenAIError):
        return exc
    detail = f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"
    message = redact(detail, secrets) if secrets else detail
    # Only the kinds litellm gives an error it does not recognise: a rate limit or a refusal
    # is the provider's, whatever else happened to be in flight when it was raised.
    if isinstance(exc, (lx.InternalServerError, lx.APIConnectionError, lx.APIError)):
        local = _local_cause(exc)
        if local is not None:
            text = f"{type(local).__name__}: {local}"
            return errors.InvalidRequestError(
                "The model call failed in this process, before the provider answered "
                f"({redact(text, secrets) if secrets else text}). An argument that cannot be "
                "sent as JSON causes this: check the keyword arguments given to the call. "
                "This is not a provider failure."
            )
    return _as_litellm(_target(exc, lx)(message), exc, lx)


def _target(exc: BaseException, lx: Any) -> type[errors.ModelError]:
    """The helix class for a litellm/openai exception: the one table of cases."""
    if _timed_out(exc, lx):
        # A read timeout while the stream is silent reaches us wrapped (litellm's
        # MidStreamFallbackError is a ServiceUnavailableError): it is a timeout all the same.
        return errors.ModelTimeoutError
    for types, target in _error_table(lx):
        if isinstance(exc, types):
            return target
    return _by_status(getattr(exc, "status_code", None))


# (helix class, litellm class) -> the class that is both; made once per pair, on first use.
_combined: dict[tuple[type[BaseException], ...], type[errors.ModelError]] = {}

# Attributes of litellm's exception the combined error does not take: helix's own win
# (``code`` is a string such as ``"429"`` on litellm's errors, ``"model_rate_limited"`` here).
_HELIX_OWNED = frozenset({"code", "message", "http_status", "retryable"})


def _as_litellm(error: errors.ModelError, exc: BaseException | None, lx: Any) -> errors.ModelError:
    """``error`` as an instance of a class that is both its own and ``exc``'s litellm class.

    The combined error keeps helix's ``code``, ``http_status``, ``retryable`` and message,
    and carries litellm's attributes (``status_code``, ``llm_provider``, ``response``, ...).
    A timeout is also a ``litellm.Timeout``; without a litellm exception (helix's own
    ``timeout=`` limits, a timeout while reading the body directly) it is one of those.
    """
    source = exc if exc is not None and type(exc).__module__.startswith("litellm") else None
    bases: tuple[type[BaseException], ...] = (type(error),)
    if source is not None:
        bases += (type(source),)
    if isinstance(error, errors.ModelTimeoutError) and not isinstance(source, lx.Timeout):
        bases += (lx.Timeout,)
    if len(bases) == 1:
        return error
    combined = _combined_class(bases)
    if combined is None:
        return error
    if source is None:  # litellm's attributes of a timeout it would have raised itself
        source = lx.Timeout(error.message, model=None, llm_provider=None)
    made = combined.__new__(combined, error.message)
    vars(made).update({k: v for k, v in vars(source).items() if k not in _HELIX_OWNED})
    vars(made).update(vars(error))
    made.args = error.args
    # A helix error that was raised already (a timeout= limit) keeps where it came from.
    made.__cause__, made.__suppress_context__ = error.__cause__, error.__suppress_context__
    return made.with_traceback(error.__traceback__)


def _combined_class(bases: tuple[type[BaseException], ...]) -> type[errors.ModelError] | None:
    """The class deriving from ``bases`` (helix's first), made once; ``None`` if Python
    cannot order their bases (never seen with litellm's tree; the helix error then stands)."""
    made = _combined.get(bases)
    if made is None:
        helix = bases[0]
        namespace = {
            "__module__": helix.__module__,
            "__qualname__": helix.__qualname__,
            "__doc__": helix.__doc__,
            # litellm's __str__ appends retry counts to its own message; helix's text stands.
            "__str__": BaseException.__str__,
            "__repr__": BaseException.__repr__,
        }
        try:
            made = type(helix.__name__, bases, namespace)
        except TypeError:
            return None
        _combined[bases] = made
    return made


_PARSE_ERRORS = (KeyError, IndexError, AttributeError, ValueError, TypeError)


def _unrecognised(lx: Any) -> tuple[type[BaseException], ...]:
    """The errors litellm raises for a failure it does not recognise (what it wraps may say)."""
    return (lx.APIConnectionError, lx.APIError, lx.InternalServerError, lx.ServiceUnavailableError)


def _unreadable(
    exc: BaseException, unrecognised: tuple[type[BaseException], ...]
) -> BaseException | None:
    """A plain Python error litellm's own code raised (reading a provider's answer it does
    not know: a Gemini stream of partial function-call arguments, a Groq error event whose
    code is a word), as ``exc`` or wrapped in errors litellm raises for what it does not
    recognise; never under an error litellm did recognise (a rate limit, a bad request)."""
    import openai  # loaded with litellm

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        if isinstance(current, _PARSE_ERRORS) and _raised_in_litellm(current):
            return current
        if isinstance(current, openai.OpenAIError) and not isinstance(current, unrecognised):
            return None
        current = (
            getattr(current, "original_exception", None) or current.__cause__ or current.__context__
        )
    return None


def _raised_in_litellm(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith("litellm."):
            return True
        tb = tb.tb_next
    return False


def _local_cause_of_json(exc: BaseException) -> bool:
    """An argument of the call that JSON cannot encode (the caller's, see :func:`_local_cause`)."""
    text = str(exc)
    return isinstance(exc, (TypeError, ValueError)) and (
        "JSON serializable" in text or "Circular reference" in text
    )


def _timed_out(exc: BaseException, lx: Any) -> bool:
    """``exc`` is, or wraps, a timeout of the HTTP call (litellm's, openai's or httpx's)."""
    import httpx  # loaded with litellm
    import openai

    kinds = (lx.Timeout, openai.APITimeoutError, httpx.TimeoutException)
    current: BaseException | None = exc
    for _ in range(8):  # the chain is short; a cycle must not loop
        if current is None:
            return False
        if isinstance(current, kinds):
            return True
        current = (
            getattr(current, "original_exception", None) or current.__cause__ or current.__context__
        )
    return False


def _error_table(lx: Any) -> list[tuple[tuple[type[BaseException], ...], type[errors.ModelError]]]:
    return [
        ((lx.AuthenticationError, lx.PermissionDeniedError), errors.ModelAuthError),
        ((lx.RateLimitError,), errors.ModelRateLimitError),
        ((lx.Timeout,), errors.ModelTimeoutError),
        (
            (
                lx.ServiceUnavailableError,
                lx.InternalServerError,
                lx.BadGatewayError,
                lx.APIConnectionError,
            ),
            errors.ModelUnavailableError,
        ),
        (
            (
                lx.BadRequestError,
                lx.NotFoundError,
                lx.UnprocessableEntityError,
                lx.ContextWindowExceededError,
            ),
            errors.ModelBadRequestError,
        ),
    ]


def _by_status(status: Any) -> type[errors.ModelError]:
    """A generic API error by its HTTP status (a 5xx is the provider's, so it is retryable)."""
    if not isinstance(status, int):
        return errors.ModelError
    if status == 429:
        return errors.ModelRateLimitError
    if status == 408:
        return errors.ModelTimeoutError
    if status >= 500:
        return errors.ModelUnavailableError
    if status in (401, 403):
        return errors.ModelAuthError
    return errors.ModelError


def _local_cause(exc: BaseException) -> BaseException | None:
    """The ``TypeError`` (or JSON circular reference) under a litellm error, if it has one.

    litellm wraps what ``json.dumps`` raised on an argument into an error that looks like the
    provider's (a 500); the chain of causes still holds the original.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        if isinstance(current, TypeError):
            return current
        if isinstance(current, ValueError) and "Circular reference" in str(current):
            return current
        current = current.__cause__ or current.__context__
    return None
