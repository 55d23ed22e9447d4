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
    │   ├── SessionLeaseLostError     state_lease_lost            409
    │   └── CallNotInFlightError      call_not_in_flight          409
    │       └── CallAlreadySettledError call_already_settled      409
    ├── CallNotFoundError             call_not_found              404
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

from .._public_home import claim_classes
from ._auth import (
    AuthorizationFailedError as AuthorizationFailedError,
    AuthorizationRequiredError as AuthorizationRequiredError,
    AuthorizationStateError as AuthorizationStateError,
    TokenRejectedError as TokenRejectedError,
)
from ._base import (
    ERROR_MASK as ERROR_MASK,
    HelixError as HelixError,
    describe_validation as describe_validation,
)
from ._model import (
    ModelAuthError as ModelAuthError,
    ModelBadRequestError as ModelBadRequestError,
    ModelError as ModelError,
    ModelRateLimitError as ModelRateLimitError,
    ModelTimeoutError as ModelTimeoutError,
    ModelUnavailableError as ModelUnavailableError,
    OutputValidationError as OutputValidationError,
)
from ._requests import (
    AuthenticationError as AuthenticationError,
    ContextValidationError as ContextValidationError,
    FrameworkNotSupportedError as FrameworkNotSupportedError,
    InvalidRequestError as InvalidRequestError,
    PayloadTooLargeError as PayloadTooLargeError,
    PermissionDeniedError as PermissionDeniedError,
    ToolContextError as ToolContextError,
)
from ._sessions import (
    CallAlreadySettledError as CallAlreadySettledError,
    CallNotFoundError as CallNotFoundError,
    CallNotInFlightError as CallNotInFlightError,
    ContextKeyConflictError as ContextKeyConflictError,
    HookError as HookError,
    NoActiveContextError as NoActiveContextError,
    SessionBusyError as SessionBusyError,
    SessionLeaseLostError as SessionLeaseLostError,
    SessionNotFoundError as SessionNotFoundError,
    StateError as StateError,
    StoreCommitUnknownError as StoreCommitUnknownError,
    StoreUnavailableError as StoreUnavailableError,
    UsageLimitExceededError as UsageLimitExceededError,
)
from ._tools import (
    SandboxError as SandboxError,
    SandboxFileNotFoundError as SandboxFileNotFoundError,
    SandboxNotFoundError as SandboxNotFoundError,
    SandboxPathError as SandboxPathError,
    SandboxTimeoutError as SandboxTimeoutError,
    SkillError as SkillError,
    SkillFormatError as SkillFormatError,
    SkillNotFoundError as SkillNotFoundError,
    ToolFailedError as ToolFailedError,
    ToolProviderAuthError as ToolProviderAuthError,
    ToolProviderError as ToolProviderError,
)

__all__ = [
    "ERROR_MASK",
    "AuthenticationError",
    "AuthorizationFailedError",
    "AuthorizationRequiredError",
    "AuthorizationStateError",
    "CallAlreadySettledError",
    "CallNotFoundError",
    "CallNotInFlightError",
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

claim_classes(globals())  # their module is this package, not the private one (_public_home.py)
