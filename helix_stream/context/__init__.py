"""Context items, context rows, their rendering and the context pass (README, "Sessions and
context rows")."""

from __future__ import annotations

from ._compaction import Compaction
from ._envelope import escape_envelopes, escape_message
from ._items import (
    APP_SOURCE,
    LATE_ANSWER_SOURCE,
    MAX_ITEM_BYTES,
    MEMORY_SOURCE,
    STEP_CONTEXT_SOURCE,
    TOOL_SOURCE,
    ContextAdded,
    ContextItem,
    ContextItemLike,
    Source,
    disable_tools,
    enable_tools,
    instruction,
    item_size,
    memory,
    notice,
    unknown_tools,
    validate_items,
)
from ._log_fold import LogFold, apply_tools_item
from ._pass import ContextPass, Gathered
from ._rows import (
    SYSTEM_FORM_SOURCES,
    ContextRow,
    model_message,
    render_record,
    render_row,
    render_row_payload,
    row_role,
)
from ._step_context import StepContextLimits, StepContextRequest

__all__ = [
    "APP_SOURCE",
    "LATE_ANSWER_SOURCE",
    "MAX_ITEM_BYTES",
    "MEMORY_SOURCE",
    "STEP_CONTEXT_SOURCE",
    "SYSTEM_FORM_SOURCES",
    "TOOL_SOURCE",
    "Compaction",
    "ContextAdded",
    "ContextItem",
    "ContextItemLike",
    "ContextPass",
    "ContextRow",
    "Gathered",
    "LogFold",
    "Source",
    "StepContextLimits",
    "StepContextRequest",
    "apply_tools_item",
    "disable_tools",
    "enable_tools",
    "escape_envelopes",
    "escape_message",
    "instruction",
    "item_size",
    "memory",
    "model_message",
    "notice",
    "render_record",
    "render_row",
    "render_row_payload",
    "row_role",
    "unknown_tools",
    "validate_items",
]
