"""helix_stream: the Vercel AI SDK's generation loop, context rows and UI stream for litellm.

Everything public is importable from here::

    import helix_stream as hs

    result = hs.stream_text(model="helix/demo", prompt="What is the weather in Paris?",
                            tools=[weather])

Importing this package does not import litellm (that takes seconds); the first model call does.
"""

from __future__ import annotations

from . import errors
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
from .errors import (
    ContextKeyConflictError,
    ContextValidationError,
    FrameworkNotSupportedError,
    HelixError,
    ModelError,
    NoActiveContextError,
    SessionNotFoundError,
    ToolContextError,
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
from .tools import Tool, ToolContext, tool

__all__ = [
    "Agent",
    "ContextItem",
    "ContextKeyConflictError",
    "ContextRow",
    "ContextValidationError",
    "Executor",
    "FrameworkNotSupportedError",
    "GenerateTextResult",
    "HelixError",
    "HookContext",
    "LifecycleEvent",
    "MemoryStore",
    "ModelError",
    "ModelMiddleware",
    "NoActiveContextError",
    "SQLiteStore",
    "SessionInfo",
    "SessionNotFoundError",
    "StateHandle",
    "StepContextLimits",
    "StepContextRequest",
    "StepInput",
    "StepResult",
    "StopCondition",
    "Store",
    "StreamTextResult",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolContextError",
    "ToolResult",
    "Usage",
    "WrappedModel",
    "current_session",
    "default_settings",
    "define_hook",
    "define_state",
    "disable_tools",
    "enable_tools",
    "errors",
    "generate_text",
    "has_tool_call",
    "instruction",
    "memory",
    "notice",
    "simulate_streaming",
    "step_count_is",
    "stream_text",
    "tool",
    "wrap_acompletion",
    "wrap_model",
]
