"""Context items, context rows, their rendering and the context pass (README, "Sessions and
context rows")."""

from __future__ import annotations

from ._envelope import escape_envelopes, escape_message
from ._fold import LogFold, apply_tools_item
from ._items import (
    MAX_ITEM_BYTES,
    ContextItem,
    ContextItemLike,
    Source,
    disable_tools,
    enable_tools,
    instruction,
    item_size,
    memory,
    notice,
    validate_items,
)
from ._pass import ContextPass, Gathered
from ._rows import (
    SYSTEM_FORM_SOURCES,
    ContextRow,
    render_record,
    render_row,
    render_row_payload,
    row_role,
)
from ._step_context import StepContextLimits, StepContextRequest

__all__ = [
    "MAX_ITEM_BYTES",
    "SYSTEM_FORM_SOURCES",
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
    "notice",
    "render_record",
    "render_row",
    "render_row_payload",
    "row_role",
    "validate_items",
]
