"""What a session's log adds up to: active tools, the hook's cursor, memories already given.

Everything here is *folded from the log*, never kept beside it, so it follows the log through a
rewind or a branch (README, "Switching tools, the step_context hook, memory, approvals" and
"Durable sessions").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..store import LogRecord
from ._rows import SYSTEM_FORM_SOURCES

__all__ = ["LogFold", "apply_tools_item"]

_NO_CURSOR = object()


class LogFold:
    """Folds log records, one at a time, into the state the context pass and the gate need.

    Attributes:
        inactive: Tool names switched off by the rows so far.
        cursor: The step_context cursor of the last hook batch that reached the log (``None``
            before any).
        memory_ids: Ids of memories already recalled into the session (and skipped ones).

    Example::

        fold = LogFold()
        fold.add(await store.read_log("session-1"))
        print(fold.inactive, fold.cursor, fold.memory_ids)
    """

    def __init__(self) -> None:
        self.inactive: set[str] = set()
        self.cursor: Any = None
        self.memory_ids: set[str] = set()

    def add(self, records: Iterable[LogRecord]) -> None:
        for record in records:
            if record.role == "context":
                self._row(record.payload)

    def _row(self, payload: Mapping[str, Any]) -> None:
        kind = payload.get("kind")
        if payload.get("cursor", _NO_CURSOR) is not _NO_CURSOR:
            self.cursor = payload["cursor"]
        if kind == "tools":
            apply_tools_item(self.inactive, payload)
        elif kind == "memory":
            self.memory_ids.update(m["id"] for m in payload.get("memories") or [])
            self.memory_ids.update(payload.get("skipped_ids") or [])


def apply_tools_item(inactive: set[str], item: Mapping[str, Any]) -> None:
    """Apply one tools item to a set of switched-off tools.

    Only the app and hooks may switch a tool on: an ``enable`` from any other source (a tool)
    has no effect (the executor logs it when the tool adds it).

    Example::

        inactive: set[str] = set()
        apply_tools_item(inactive, {"kind": "tools", "source": "app", "disable": ["search"]})
        apply_tools_item(inactive, {"kind": "tools", "source": "tool", "enable": ["search"]})
        assert inactive == {"search"}                   # a tool may only switch off
    """
    inactive.update(item.get("disable") or [])
    if item.get("source") in SYSTEM_FORM_SOURCES:
        inactive.difference_update(item.get("enable") or [])
