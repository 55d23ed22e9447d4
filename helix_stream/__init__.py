"""helix_stream: the Vercel AI SDK's generation loop, context rows and UI stream for litellm.

Everything public is importable from here::

    import helix_stream as hs

    result = hs.stream_text(model="helix/demo", prompt="What is the weather in Paris?",
                            tools=[weather])

Importing the package is cheap: the public names are loaded on first use (PEP 562), and
litellm — which takes seconds to import — only with the first model call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors as errors
from .errors import (
    AuthorizationFailedError as AuthorizationFailedError,
    AuthorizationRequiredError as AuthorizationRequiredError,
    AuthorizationStateError as AuthorizationStateError,
    CallAlreadySettledError as CallAlreadySettledError,
    CallNotFoundError as CallNotFoundError,
    CallNotInFlightError as CallNotInFlightError,
    ContextKeyConflictError as ContextKeyConflictError,
    ContextValidationError as ContextValidationError,
    FrameworkNotSupportedError as FrameworkNotSupportedError,
    HelixError as HelixError,
    HookError as HookError,
    InvalidRequestError as InvalidRequestError,
    ModelError as ModelError,
    ModelTimeoutError as ModelTimeoutError,
    NoActiveContextError as NoActiveContextError,
    OutputValidationError as OutputValidationError,
    SandboxError as SandboxError,
    SandboxFileNotFoundError as SandboxFileNotFoundError,
    SandboxNotFoundError as SandboxNotFoundError,
    SandboxPathError as SandboxPathError,
    SandboxTimeoutError as SandboxTimeoutError,
    SessionBusyError as SessionBusyError,
    SessionNotFoundError as SessionNotFoundError,
    SkillError as SkillError,
    SkillFormatError as SkillFormatError,
    SkillNotFoundError as SkillNotFoundError,
    StateError as StateError,
    StoreCommitUnknownError as StoreCommitUnknownError,
    StoreUnavailableError as StoreUnavailableError,
    TokenRejectedError as TokenRejectedError,
    ToolContextError as ToolContextError,
    ToolProviderError as ToolProviderError,
    UsageLimitExceededError as UsageLimitExceededError,
)

if TYPE_CHECKING:  # "X as X": explicit re-exports, so type checkers see the lazy names
    from ._usage_limits import (
        UsageLimits as UsageLimits,
        UsageTotals as UsageTotals,
    )
    from .agent import (
        Agent as Agent,
    )
    from .auth import (
        EncryptedTokenStore as EncryptedTokenStore,
        MemoryTokenStore as MemoryTokenStore,
        Token as Token,
        TokenRequest as TokenRequest,
        TokenStore as TokenStore,
        oauth_auth as oauth_auth,
        token_auth as token_auth,
    )
    from .chunks import (
        Usage as Usage,
    )
    from .context import (
        Compaction as Compaction,
        ContextAdded as ContextAdded,
        ContextItem as ContextItem,
        ContextRow as ContextRow,
        StepContextLimits as StepContextLimits,
        StepContextRequest as StepContextRequest,
        disable_tools as disable_tools,
        enable_tools as enable_tools,
        instruction as instruction,
        memory as memory,
        notice as notice,
    )
    from .hooks import (
        HookContext as HookContext,
        LifecycleEvent as LifecycleEvent,
        define_hook as define_hook,
    )
    from .loop import (
        AbortEvent as AbortEvent,
        CacheBreakpoint as CacheBreakpoint,
        CacheLedger as CacheLedger,
        EndEvent as EndEvent,
        GenerateTextResult as GenerateTextResult,
        ModelCallEndEvent as ModelCallEndEvent,
        ModelCallPerformance as ModelCallPerformance,
        ModelCallStartEvent as ModelCallStartEvent,
        PromptCache as PromptCache,
        StartEvent as StartEvent,
        StepEndEvent as StepEndEvent,
        StepPerformance as StepPerformance,
        StepResult as StepResult,
        StepStartEvent as StepStartEvent,
        StopCondition as StopCondition,
        StreamTextResult as StreamTextResult,
        StreamTextSyncResult as StreamTextSyncResult,
        Timeout as Timeout,
        ToolCall as ToolCall,
        ToolCallEndEvent as ToolCallEndEvent,
        ToolCallStartEvent as ToolCallStartEvent,
        ToolResult as ToolResult,
        generate_text as generate_text,
        generate_text_sync as generate_text_sync,
        has_tool_call as has_tool_call,
        smooth_stream as smooth_stream,
        step_count_is as step_count_is,
        stream_text as stream_text,
        stream_text_sync as stream_text_sync,
    )
    from .mcp import (
        MCPServer as MCPServer,
    )
    from .middleware import (
        ModelMiddleware as ModelMiddleware,
        WrappedModel as WrappedModel,
        default_settings as default_settings,
        simulate_streaming as simulate_streaming,
        wrap_acompletion as wrap_acompletion,
        wrap_completion as wrap_completion,
        wrap_model as wrap_model,
    )
    from .prepare_step import (
        StepInput as StepInput,
    )
    from .sandbox import (
        BubblewrapSandbox as BubblewrapSandbox,
        LocalSandbox as LocalSandbox,
        Sandbox as Sandbox,
        SandboxProvider as SandboxProvider,
        SandboxResult as SandboxResult,
        Skill as Skill,
        SkillHandle as SkillHandle,
        skills_from_dir as skills_from_dir,
    )
    from .session import (
        ApprovalAnswer as ApprovalAnswer,
        Executor as Executor,
        Steered as Steered,
        ToolAnswer as ToolAnswer,
    )
    from .state import (
        SessionInfo as SessionInfo,
        StateHandle as StateHandle,
        current_session as current_session,
        define_state as define_state,
    )
    from .steps import (
        tool_result_from as tool_result_from,
    )
    from .store import (
        MemoryStore as MemoryStore,
        PostgresStore as PostgresStore,
        SQLiteStore as SQLiteStore,
        Store as Store,
        open_store as open_store,
    )
    from .telemetry import (
        TelemetrySettings as TelemetrySettings,
    )
    from .tools import (
        Tool as Tool,
        ToolContext as ToolContext,
        tool as tool,
    )

# The one place the version is written: pyproject.toml reads it from here (setuptools reads the
# literal without importing the package), CHANGELOG.md's newest entry names it.
__version__ = "0.3.0"

# Where each lazily loaded public name lives.
_LAZY: dict[str, str] = {
    "Agent": "agent",
    **dict.fromkeys(
        [
            "EncryptedTokenStore",
            "MemoryTokenStore",
            "Token",
            "TokenRequest",
            "TokenStore",
            "oauth_auth",
            "token_auth",
        ],
        "auth",
    ),
    "Usage": "chunks",
    **dict.fromkeys(
        [
            "Compaction",
            "ContextAdded",
            "ContextItem",
            "ContextRow",
            "StepContextLimits",
            "StepContextRequest",
            "disable_tools",
            "enable_tools",
            "instruction",
            "memory",
            "notice",
        ],
        "context",
    ),
    **dict.fromkeys(["ApprovalAnswer", "Executor", "Steered", "ToolAnswer"], "session"),
    **dict.fromkeys(
        [
            "BubblewrapSandbox",
            "LocalSandbox",
            "Sandbox",
            "SandboxProvider",
            "SandboxResult",
            "Skill",
            "SkillHandle",
            "skills_from_dir",
        ],
        "sandbox",
    ),
    **dict.fromkeys(["HookContext", "LifecycleEvent", "define_hook"], "hooks"),
    **dict.fromkeys(
        [
            "AbortEvent",
            "CacheBreakpoint",
            "CacheLedger",
            "EndEvent",
            "ModelCallEndEvent",
            "PromptCache",
            "ModelCallPerformance",
            "ModelCallStartEvent",
            "StartEvent",
            "StepEndEvent",
            "StepPerformance",
            "StepStartEvent",
            "ToolCallEndEvent",
            "ToolCallStartEvent",
            "GenerateTextResult",
            "StepResult",
            "StopCondition",
            "StreamTextResult",
            "StreamTextSyncResult",
            "Timeout",
            "ToolCall",
            "ToolResult",
            "generate_text",
            "generate_text_sync",
            "has_tool_call",
            "smooth_stream",
            "step_count_is",
            "stream_text",
            "stream_text_sync",
        ],
        "loop",
    ),
    "MCPServer": "mcp",
    **dict.fromkeys(
        [
            "ModelMiddleware",
            "WrappedModel",
            "default_settings",
            "simulate_streaming",
            "wrap_acompletion",
            "wrap_completion",
            "wrap_model",
        ],
        "middleware",
    ),
    "StepInput": "prepare_step",
    "tool_result_from": "steps",
    **dict.fromkeys(["SessionInfo", "StateHandle", "current_session", "define_state"], "state"),
    **dict.fromkeys(
        ["MemoryStore", "PostgresStore", "SQLiteStore", "Store", "open_store"], "store"
    ),
    "TelemetrySettings": "telemetry",
    **dict.fromkeys(["UsageLimits", "UsageTotals"], "_usage_limits"),
    **dict.fromkeys(["Tool", "ToolContext", "tool"], "tools"),
}

__all__ = sorted(
    [
        *_LAZY,
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
        "ModelError",
        "ModelTimeoutError",
        "NoActiveContextError",
        "OutputValidationError",
        "SandboxError",
        "SandboxFileNotFoundError",
        "SandboxNotFoundError",
        "SandboxPathError",
        "SandboxTimeoutError",
        "SessionBusyError",
        "SessionNotFoundError",
        "SkillError",
        "SkillFormatError",
        "SkillNotFoundError",
        "StateError",
        "StoreCommitUnknownError",
        "StoreUnavailableError",
        "TokenRejectedError",
        "ToolContextError",
        "ToolProviderError",
        "UsageLimitExceededError",
        "errors",
    ]
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'helix_stream' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return list(__all__)
