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

from . import errors
from .errors import (
    ContextKeyConflictError,
    ContextValidationError,
    FrameworkNotSupportedError,
    HelixError,
    HookError,
    ModelError,
    NoActiveContextError,
    SessionBusyError,
    SessionNotFoundError,
    StateError,
    ToolContextError,
)

if TYPE_CHECKING:
    from .agent import Agent, StepContextLimits
    from .chunks import Usage
    from .context import (
        ContextItem,
        ContextRow,
        StepContextRequest,
        disable_tools,
        enable_tools,
        instruction,
        memory,
        notice,
    )
    from .executor import Executor
    from .hooks import HookContext, LifecycleEvent, define_hook
    from .loop import (
        GenerateTextResult,
        StepResult,
        StopCondition,
        StreamTextResult,
        ToolCall,
        ToolResult,
        generate_text,
        has_tool_call,
        step_count_is,
        stream_text,
    )
    from .middleware import (
        ModelMiddleware,
        StepInput,
        WrappedModel,
        default_settings,
        simulate_streaming,
        wrap_acompletion,
        wrap_model,
    )
    from .state import SessionInfo, StateHandle, current_session, define_state
    from .store import MemoryStore, SQLiteStore, Store
    from .telemetry import TelemetrySettings
    from .tools import Tool, ToolContext, tool

# Where each lazily loaded public name lives.
_LAZY: dict[str, str] = {
    **dict.fromkeys(["Agent", "StepContextLimits"], "agent"),
    "Usage": "chunks",
    **dict.fromkeys(
        [
            "ContextItem",
            "ContextRow",
            "StepContextRequest",
            "disable_tools",
            "enable_tools",
            "instruction",
            "memory",
            "notice",
        ],
        "context",
    ),
    "Executor": "executor",
    **dict.fromkeys(["HookContext", "LifecycleEvent", "define_hook"], "hooks"),
    **dict.fromkeys(
        [
            "GenerateTextResult",
            "StepResult",
            "StopCondition",
            "StreamTextResult",
            "ToolCall",
            "ToolResult",
            "generate_text",
            "has_tool_call",
            "step_count_is",
            "stream_text",
        ],
        "loop",
    ),
    **dict.fromkeys(
        [
            "ModelMiddleware",
            "StepInput",
            "WrappedModel",
            "default_settings",
            "simulate_streaming",
            "wrap_acompletion",
            "wrap_model",
        ],
        "middleware",
    ),
    **dict.fromkeys(["SessionInfo", "StateHandle", "current_session", "define_state"], "state"),
    **dict.fromkeys(["MemoryStore", "SQLiteStore", "Store"], "store"),
    "TelemetrySettings": "telemetry",
    **dict.fromkeys(["Tool", "ToolContext", "tool"], "tools"),
}

__all__ = sorted(
    [
        *_LAZY,
        "ContextKeyConflictError",
        "ContextValidationError",
        "FrameworkNotSupportedError",
        "HelixError",
        "HookError",
        "ModelError",
        "NoActiveContextError",
        "SessionBusyError",
        "SessionNotFoundError",
        "StateError",
        "ToolContextError",
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
