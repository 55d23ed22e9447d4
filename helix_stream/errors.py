"""Every error the package raises: one root, typed subclasses.

The tree::

    HelixError                        code, http_status, retryable
    ├── ContextValidationError        validation_error            400
    ├── ToolContextError              validation_error            400
    ├── InvalidRequestError           invalid_request             400
    │   ├── PayloadTooLargeError      payload_too_large           413
    │   └── AuthorizationStateError   authorization_state_invalid 400
    ├── AuthenticationError           unauthenticated             401
    ├── AuthorizationRequiredError    authorization_required      401
    ├── TokenRejectedError            token_rejected              401
    ├── AuthorizationFailedError      authorization_failed        502
    ├── PermissionDeniedError         forbidden                   403
    ├── SessionNotFoundError          state_session_not_found     404
    ├── ContextKeyConflictError       state_context_key_conflict  409
    ├── SessionBusyError              state_session_busy          409
    ├── StateError                    state_invalid               409
    │   └── SessionLeaseLostError     state_lease_lost            409
    ├── UsageLimitExceededError       usage_limit_exceeded        429
    ├── NoActiveContextError          no_active_context           500
    ├── ToolFailedError               tool_failed                 500 (on the UI stream only)
    ├── ToolProviderError             tool_provider_unavailable   503 retryable
    │   └── ToolProviderAuthError     tool_provider_unauthorized  502
    ├── HookError                     hook_failed                 500
    ├── FrameworkNotSupportedError    framework_not_supported     501
    ├── SandboxError                  sandbox_error               500
    │   ├── SandboxPathError          sandbox_path_refused        400
    │   ├── SandboxNotFoundError      sandbox_not_found           404
    │   ├── SandboxFileNotFoundError  sandbox_file_not_found      404
    │   └── SandboxTimeoutError       sandbox_timeout             504
    ├── SkillError                    skill_error                 500
    │   ├── SkillFormatError          skill_invalid               400
    │   └── SkillNotFoundError        skill_not_found             404
    ├── StoreUnavailableError         store_unavailable           503 retryable
    │   └── StoreCommitUnknownError   store_commit_unknown        503
    └── ModelError                    model_error                 502 (translated litellm errors)
        ├── ModelAuthError            model_auth_error            401
        ├── ModelBadRequestError      model_bad_request           400
        ├── ModelRateLimitError       model_rate_limited          429 retryable
        ├── ModelTimeoutError         model_timeout               504 retryable
        ├── ModelUnavailableError     model_unavailable           503 retryable
        └── OutputValidationError     output_invalid              502 (carries the raw text)

Foreign exceptions (litellm's) are translated in exactly one place,
:func:`helix_stream.models._litellm.translate_error`, with ``raise ... from exc``.
"""

from __future__ import annotations

from typing import ClassVar

from ._validation_text import describe_validation as describe_validation

__all__ = [
    "ERROR_MASK",
    "AuthenticationError",
    "AuthorizationFailedError",
    "AuthorizationRequiredError",
    "AuthorizationStateError",
    "ContextKeyConflictError",
    "ContextValidationError",
    "FrameworkNotSupportedError",
    "HelixError",
    "HookError",
    "InvalidRequestError",
    "ModelAuthError",
    "ModelBadRequestError",
    "ModelError",
    "ModelRateLimitError",
    "ModelTimeoutError",
    "ModelUnavailableError",
    "NoActiveContextError",
    "OutputValidationError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "SandboxError",
    "SandboxFileNotFoundError",
    "SandboxNotFoundError",
    "SandboxPathError",
    "SandboxTimeoutError",
    "SessionBusyError",
    "SessionLeaseLostError",
    "SessionNotFoundError",
    "SkillError",
    "SkillFormatError",
    "SkillNotFoundError",
    "StateError",
    "StoreCommitUnknownError",
    "StoreUnavailableError",
    "TokenRejectedError",
    "ToolContextError",
    "ToolFailedError",
    "ToolProviderAuthError",
    "ToolProviderError",
    "UsageLimitExceededError",
    "describe_validation",
]


# What a user sees of an error unless an ``on_error`` callback chooses other text: server
# internals (and a tool's exception text) must not leak to a chat UI.
ERROR_MASK = "An error occurred."


class HelixError(Exception):
    """Root of every error helix_stream raises.

    Attributes:
        code: A stable machine-readable code (``validation_error``, ...).
        http_status: The HTTP status a server should answer with.
        retryable: Whether the same call may succeed if simply tried again.
        message: What was wrong and what to do about it.
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


class ContextValidationError(HelixError):
    """A context item is invalid (unknown kind, ``__finish__`` switched off, over 32 KiB, ...)."""

    code = "validation_error"
    http_status = 400


class ToolContextError(HelixError):
    """A tool's entry in ``tools_context`` is missing or does not match its ``context_schema``."""

    code = "validation_error"
    http_status = 400


class InvalidRequestError(HelixError):
    """A request body or argument has the wrong shape."""

    code = "invalid_request"
    http_status = 400


class PayloadTooLargeError(InvalidRequestError):
    """A request body is larger than the server accepts."""

    code = "payload_too_large"
    http_status = 413


class AuthenticationError(HelixError):
    """The caller did not authenticate (raise it from ``authenticate``)."""

    code = "unauthenticated"
    http_status = 401


class AuthorizationStateError(InvalidRequestError):
    """A sign-in callback's ``state`` is forged, expired, malformed or already used; nothing
    was written (README, "Tools that act for the user: authorization")."""

    code = "authorization_state_invalid"
    http_status = 400


class AuthorizationRequiredError(HelixError):
    """A tool needs the user to sign in to a service first (``ctx.get_token()`` found no
    token for an interactive strategy, or the tool called ``ctx.require_auth()``).

    Attributes:
        strategy: The name of the tool's auth strategy.
        tool_name: The tool that asked.
    """

    code = "authorization_required"
    http_status = 401

    def __init__(self, message: str, *, strategy: str = "", tool_name: str = "") -> None:
        super().__init__(message)
        self.strategy = strategy
        self.tool_name = tool_name


class TokenRejectedError(HelixError):
    """The service a tool called refused the tool's token (raise it, or call
    ``ctx.reject_token()``): the token is evicted from the per-step cache and the token
    store, so that the next ``ctx.get_token()`` does not hand it out again."""

    code = "token_rejected"
    http_status = 401

    def __init__(self, message: str = "the service refused the token") -> None:
        super().__init__(message)


class AuthorizationFailedError(HelixError):
    """An OAuth token endpoint refused a code exchange or a refresh, or answered with
    something that is not a token.

    Attributes:
        error: The OAuth error code the endpoint gave (``invalid_grant``, ...), or a short
            description of what was wrong with its answer.
    """

    code = "authorization_failed"
    http_status = 502

    def __init__(self, message: str, *, error: str) -> None:
        super().__init__(message)
        self.error = error


class PermissionDeniedError(HelixError):
    """The caller is known but may not do this (raise it from ``authenticate``)."""

    code = "forbidden"
    http_status = 403


class SessionNotFoundError(HelixError):
    """No session has this id."""

    code = "state_session_not_found"
    http_status = 404


class ContextKeyConflictError(HelixError):
    """The same ``key`` was used before with other items; nothing was written."""

    code = "state_context_key_conflict"
    http_status = 409


class SessionBusyError(HelixError):
    """The session is already being run by someone else."""

    code = "state_session_busy"
    http_status = 409
    retryable = True


class StateError(HelixError):
    """The session is not in a state that allows this operation (e.g. nothing to resume)."""

    code = "state_invalid"
    http_status = 409


class SessionLeaseLostError(StateError):
    """A turn's write was refused: its session's lease was taken over by another turn (the
    lease had expired: README, "Reliability notes"). Nothing was written."""

    code = "state_lease_lost"


class UsageLimitExceededError(HelixError):
    """A usage limit stopped the run before a model call; ``limit`` names it, ``scope`` is
    ``"run"`` or ``"session"``. Example: ``except hs.UsageLimitExceededError as e: e.limit``."""

    code = "usage_limit_exceeded"
    http_status = 429

    def __init__(self, message: str, *, limit: str, scope: str) -> None:
        super().__init__(message)
        self.limit, self.scope = limit, scope


class NoActiveContextError(HelixError):
    """A session-scoped API (``define_state``, ``current_session``) was used outside a run."""

    code = "no_active_context"
    http_status = 500


class ToolFailedError(HelixError):
    """A tool call ended in an error (invalid input, or its body raised).

    The loop does not raise it — the model sees the error text and carries on. The UI
    transformer hands it to ``on_error`` so that the text a chat UI shows is chosen there
    (masked by default, like every error).
    """

    code = "tool_failed"
    http_status = 500

    def __init__(self, message: str, *, error_type: str | None = None) -> None:
        super().__init__(message)
        # Telemetry's ``error.type`` when the class name is not what a dashboard should group
        # by: an MCP tool's ``isError`` result is ``tool_error`` (OpenTelemetry semconv).
        self.error_type = error_type


class ToolProviderError(HelixError):
    """A source of tools (an MCP server) cannot be used: it did not start, cannot be reached,
    or dropped the connection; nothing of the call ran on it.

    The message names the server and what to check. Raised to the app when the tools are
    first needed (``await server.tools()``); inside a run, a tool call that meets it becomes
    an error result the model sees, and the next use connects again.

    Attributes:
        server: The server's name.
    """

    code = "tool_provider_unavailable"
    http_status = 503
    retryable = True

    def __init__(self, message: str, *, server: str) -> None:
        super().__init__(message)
        self.server = server


class ToolProviderAuthError(ToolProviderError):
    """The tool provider refused the credentials (HTTP 401 or 403): trying again with the
    same ones will not help.

    Attributes:
        status: The HTTP status it answered.
        challenge: Its ``WWW-Authenticate`` header (an OAuth challenge names where to sign
            in), or ``None``.
    """

    code = "tool_provider_unauthorized"
    http_status = 502
    retryable = False

    def __init__(
        self, message: str, *, server: str, status: int, challenge: str | None = None
    ) -> None:
        super().__init__(message, server=server)
        self.status = status
        self.challenge = challenge


class HookError(HelixError):
    """A ``define_hook`` handler raised; ``error`` is what it raised, ``event`` what it handled."""

    code = "hook_failed"
    http_status = 500

    def __init__(self, event: str, error: BaseException) -> None:
        super().__init__(f"a {event} hook raised {type(error).__name__}: {error}")
        self.event = event
        self.error = error


class FrameworkNotSupportedError(HelixError):
    """The store or runtime in use cannot honour this feature; nothing was written."""

    code = "framework_not_supported"
    http_status = 501


class SandboxError(HelixError):
    """A sandbox refused or failed an operation (the subclasses say which)."""

    code = "sandbox_error"
    http_status = 500


class SandboxPathError(SandboxError):
    """A path leaves ``/workspace`` (``..``, an absolute path elsewhere, a symbolic link out),
    or names the wrong kind of file (a directory where a file is needed)."""

    code = "sandbox_path_refused"
    http_status = 400


class SandboxNotFoundError(SandboxError):
    """No sandbox has this id (never created, closed, or another session's)."""

    code = "sandbox_not_found"
    http_status = 404


class SandboxFileNotFoundError(SandboxError):
    """A ``/workspace`` path names no file (or, as a working directory, no directory)."""

    code = "sandbox_file_not_found"
    http_status = 404


class SandboxTimeoutError(SandboxError):
    """A command ran past its timeout and was killed, with every process it started.

    Attributes:
        timeout: The timeout in seconds.
        stdout: What the command wrote to stdout before it was killed (capped like a result).
        stderr: The same for stderr.
    """

    code = "sandbox_timeout"
    http_status = 504

    def __init__(self, timeout: float, *, stdout: str = "", stderr: str = "") -> None:
        super().__init__(
            f"The command ran longer than its timeout of {timeout:g} s and was killed. Pass "
            "a larger timeout= to run(), or split the work into shorter commands."
        )
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr


class SkillError(HelixError):
    """A skill could not be read or used (the subclasses say why)."""

    code = "skill_error"
    http_status = 500


class SkillFormatError(SkillError):
    """A skill is malformed (its ``SKILL.md``, its name, a file of it); the message names it."""

    code = "skill_invalid"
    http_status = 400


class SkillNotFoundError(SkillError):
    """No skill has this name, or the skill has no file at this path."""

    code = "skill_not_found"
    http_status = 404


class StoreUnavailableError(HelixError):
    """The session store could not be reached, even on a fresh connection; nothing was written.

    A store call that loses its connection is tried once more on a fresh one (README,
    "Reliability notes"); this is what a call raises when that failed too, or when no pooled
    connection came free in time. Trying again later may succeed.
    """

    code = "store_unavailable"
    http_status = 503
    retryable = True


class StoreCommitUnknownError(StoreUnavailableError):
    """The connection was lost while a write's COMMIT was in flight, and its outcome could not
    be found out: the write may or may not have been applied. Read before writing again."""

    code = "store_commit_unknown"
    retryable = False


class ModelError(HelixError):
    """The model provider failed (translated from litellm)."""

    code = "model_error"
    http_status = 502


class ModelAuthError(ModelError):
    """The provider refused the credentials."""

    code = "model_auth_error"
    http_status = 401


class ModelBadRequestError(ModelError):
    """The provider refused the request as malformed (bad params, context too long, ...)."""

    code = "model_bad_request"
    http_status = 400


class ModelRateLimitError(ModelError):
    """The provider rate-limited the call."""

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
    """The provider is down or overloaded."""

    code = "model_unavailable"
    http_status = 503
    retryable = True


class OutputValidationError(ModelError):
    """The model's structured output does not match the requested schema (or is not JSON).

    Attributes:
        text: The raw text the model produced (or the finish tool's arguments), unchanged.
        schema_name: The name of the pydantic model it was validated against.
        errors: What was wrong, field by field.
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
