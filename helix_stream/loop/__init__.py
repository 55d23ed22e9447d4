"""The generation loop: ``stream_text``, ``generate_text``, steps and stop conditions."""

from __future__ import annotations

from .._cache_ledger import CacheBreakpoint, CacheLedger
from .._timeout import Timeout
from .._transform import smooth_stream
from ..models._cache import PromptCache
from ..steps import (
    ModelCallPerformance,
    StepPerformance,
    StepResult,
    StopCondition,
    ToolCall,
    ToolResult,
    has_tool_call,
    step_count_is,
)
from ._api import (
    DEFAULT_MAX_STEPS,
    StreamTextSyncResult,
    generate_text,
    generate_text_sync,
    stream_text,
    stream_text_sync,
)
from ._lifecycle import (
    AbortEvent,
    EndEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    StartEvent,
    StepEndEvent,
    StepStartEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from ._result import GenerateTextResult, StreamTextResult

__all__ = [
    "DEFAULT_MAX_STEPS",
    "AbortEvent",
    "CacheBreakpoint",
    "CacheLedger",
    "EndEvent",
    "GenerateTextResult",
    "ModelCallEndEvent",
    "ModelCallPerformance",
    "ModelCallStartEvent",
    "PromptCache",
    "StartEvent",
    "StepEndEvent",
    "StepPerformance",
    "StepResult",
    "StepStartEvent",
    "StopCondition",
    "StreamTextResult",
    "StreamTextSyncResult",
    "Timeout",
    "ToolCall",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolResult",
    "generate_text",
    "generate_text_sync",
    "has_tool_call",
    "smooth_stream",
    "step_count_is",
    "stream_text",
    "stream_text_sync",
]
