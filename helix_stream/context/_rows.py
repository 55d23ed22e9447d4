"""Context rows (role ``context`` in the log) and how they are shown to the model.

Rendering is deterministic and documented, because a row is sent on every later call exactly
as it was first sent — that is what keeps earlier request messages byte-identical:

* source ``app`` or ``hook`` → a **system** message (operator authority);
* source ``tool``, ``memory`` or ``late-answer`` → a **user** message (as a tool's output is);

with the content in an envelope that names the kind and the source::

    <context kind="instruction" source="app">
    Answer in French.
    </context>
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..store import LogRecord

__all__ = ["SYSTEM_FORM_SOURCES", "ContextRow", "render_record", "render_row_payload"]

SYSTEM_FORM_SOURCES = frozenset({"app", "hook"})


class ContextRow(BaseModel):
    """A committed context row, as servers, audit and telemetry see it (never users).

    Attributes:
        seq: Its position in the session's log.
        kind: ``instruction``, ``notice``, ``tools`` or ``memory``.
        source: ``app``, ``hook``, ``tool``, ``memory`` or ``late-answer``.
        content: The text (instruction and notice rows).
        disable, enable: Tool names (tools rows).
        memories: ``[{"id", "content"}]`` (memory rows).
        cursor: The step_context hook's cursor stored with its batch, if any.
        origin: Which queue entry, request key or call site produced it.
        created_at: Unix time of the commit.
    """

    model_config = ConfigDict(frozen=True)

    seq: int
    kind: str
    source: str
    content: str | None = None
    disable: list[str] | None = None
    enable: list[str] | None = None
    memories: list[dict[str, Any]] | None = None
    cursor: Any = None
    origin: dict[str, Any] = {}
    created_at: float = 0.0

    @classmethod
    def from_record(cls, record: LogRecord) -> ContextRow:
        p = record.payload
        return cls(
            seq=record.seq,
            kind=p["kind"],
            source=p["source"],
            content=p.get("content"),
            disable=p.get("disable"),
            enable=p.get("enable"),
            memories=p.get("memories"),
            cursor=p.get("cursor"),
            origin=p.get("origin", {}),
            created_at=record.created_at,
        )


def _escape(text: str) -> str:
    # Text inside the envelope must not be able to close it.
    return text.replace("</context", "<\\/context")


def _body(payload: dict[str, Any]) -> str:
    kind = payload["kind"]
    if kind == "tools":
        parts = []
        if payload.get("disable"):
            parts.append("Switched off: " + ", ".join(payload["disable"]) + ".")
        if payload.get("enable"):
            parts.append("Switched on: " + ", ".join(payload["enable"]) + ".")
        return " ".join(parts)
    if kind == "memory":
        memories = payload.get("memories") or []
        if not memories:
            return "(no memories recalled)"
        return "\n".join(f"- {m['content']}" for m in memories)
    return str(payload.get("content", ""))


def render_row_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The model message for a row payload (see the module docstring)."""
    source = payload["source"]
    role = "system" if source in SYSTEM_FORM_SOURCES else "user"
    head = f'<context kind="{payload["kind"]}" source="{source}">'
    text = f"{head}\n{_escape(_body(payload))}\n</context>"
    return {"role": role, "content": text}


def render_record(record: LogRecord) -> dict[str, Any]:
    """A log record as the model sees it: rows rendered, messages as stored — without the
    executor's bookkeeping keys (those starting with ``_``)."""
    if record.role == "context":
        return render_row_payload(record.payload)
    return {k: v for k, v in record.payload.items() if not k.startswith("_")}
