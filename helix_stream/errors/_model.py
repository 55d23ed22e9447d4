"""Errors of the model provider, translated from litellm in one place
(``helix_stream/models/_translate.py``), and a structured output that does not validate."""

from __future__ import annotations

from ._base import HelixError

__all__ = [
    "ModelAuthError",
    "ModelBadRequestError",
    "ModelError",
    "ModelRateLimitError",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "OutputValidationError",
]


class ModelError(HelixError):
    """The model provider failed (translated from litellm).

    Example::

        from helix_stream.errors import ModelError
        from litellm.exceptions import RateLimitError

        try:
            text = await hs.stream_text(model="openai/gpt-4o-mini", prompt="Hi").text()
        except ModelError as exc:                  # also the litellm exception class it came from
            print(exc.code, exc.http_status, exc.retryable)
        except RateLimitError:                     # never reached: the ModelError clause caught it
            ...
    """

    code = "model_error"
    http_status = 502


class ModelAuthError(ModelError):
    """The provider refused the credentials.

    Example::

        from helix_stream.errors import ModelAuthError

        try:
            await hs.generate_text(model="openai/gpt-4o-mini", prompt="Hi", api_key="sk-wrong")
        except ModelAuthError as exc:              # also a litellm.AuthenticationError
            print(exc.code)                        # model_auth_error
    """

    code = "model_auth_error"
    http_status = 401


class ModelBadRequestError(ModelError):
    """The provider refused the request as malformed (bad params, context too long, ...).

    Example::

        from helix_stream.errors import ModelBadRequestError

        try:
            await hs.generate_text(model="openai/gpt-4o-mini", prompt="x" * 10_000_000)
        except ModelBadRequestError as exc:        # context too long, bad parameters, ...
            print(exc.http_status)                 # 400
    """

    code = "model_bad_request"
    http_status = 400


class ModelRateLimitError(ModelError):
    """The provider rate-limited the call.

    Example::

        from helix_stream.errors import ModelRateLimitError

        try:
            await hs.generate_text(model="openai/gpt-4o-mini", prompt="Hi", max_retries=0)
        except ModelRateLimitError as exc:         # also a litellm.RateLimitError
            assert exc.retryable and exc.http_status == 429
    """

    code = "model_rate_limited"
    http_status = 429
    retryable = True


class ModelTimeoutError(ModelError):
    """The provider did not answer in time: a limit of the run's ``timeout=`` fired, or the
    HTTP client's read timeout did.

    Attributes:
        limit: Which limit fired: ``"total"``, ``"step"``, ``"first_chunk"`` or ``"chunk"``
            (a ``timeout=`` limit, README "Timeouts"), ``None`` for the HTTP client's own.
        after: Seconds the limit allowed (``None`` when not known).

    Example::

        from helix_stream.errors import ModelTimeoutError

        try:
            await hs.generate_text(model="openai/gpt-4o-mini", prompt="Hi",
                                   timeout=hs.Timeout(first_chunk=10))
        except ModelTimeoutError as exc:           # also a litellm.Timeout
            print(exc.limit, exc.after)            # first_chunk 10.0
    """

    code = "model_timeout"
    http_status = 504
    retryable = True

    def __init__(
        self, message: str, *, limit: str | None = None, after: float | None = None
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.after = after


class ModelUnavailableError(ModelError):
    """The provider is down or overloaded.

    Example::

        from helix_stream.errors import ModelUnavailableError

        try:
            await hs.generate_text(model="openai/gpt-4o-mini", prompt="Hi")
        except ModelUnavailableError as exc:       # down or overloaded (after the retries)
            assert exc.retryable
    """

    code = "model_unavailable"
    http_status = 503
    retryable = True


class OutputValidationError(ModelError):
    """The model's structured output does not match the requested schema (or is not JSON).

    Attributes:
        text: The raw text the model produced (or the finish tool's arguments), unchanged.
        schema_name: The name of the pydantic model it was validated against.
        errors: What was wrong, field by field.

    Example::

        from helix_stream.errors import OutputValidationError
        from pydantic import BaseModel

        class City(BaseModel):
            name: str
            population: int

        try:
            city = (await hs.generate_text(model="helix/demo", prompt="Paris?", output=City)).output
        except OutputValidationError as exc:
            print(exc.schema_name, exc.errors, exc.text)   # the raw text is kept
    """

    code = "output_invalid"
    http_status = 502

    def __init__(self, text: str, *, schema_name: str, errors: str) -> None:
        super().__init__(
            f"The model's output is not a valid {schema_name}: {errors}. The raw text is on "
            "this error's .text."
        )
        self.text = text
        self.schema_name = schema_name
        self.errors = errors
