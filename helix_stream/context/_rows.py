"""Context rows (role ``context`` in the log) and how they are shown to the model.

Rendering is deterministic and documented, because a row is sent on every later call exactly
as it was first sent — that is what keeps earlier request messages byte-identical. The form
depends on the row's source and on the provider family the request goes to (README, "Rows on
each provider"):

* source ``app`` or ``hook`` (operator authority) → a **system** message on the families whose
  wire format keeps a mid-conversation system message in place (OpenAI-compatible), a **user**
  message everywhere else (Anthropic, Bedrock, Gemini, Mistral, ...), so that litellm neither
  hoists it into the system prompt nor rewrites it;
* source ``tool``, ``memory`` or ``late-answer`` → a **user** message (as a tool's output is);

with the content in an envelope that names the kind and the source::

    <context kind="instruction" source="app">
    Answer in French.
    </context>

The envelope is what tells a row from user text, so every other text the model gets from the
log — user messages, tool results, assistant text, and the row's own content — is escaped so
that it cannot open or close one (see :mod:`helix_stream.context._envelope`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..models._family import Family, traits
from ..store import LogRecord
from ._envelope import envelope, escape_envelopes, escape_message

__all__ = [
    "SYSTEM_FORM_SOURCES",
    "ContextRow",
    "model_message",
    "render_record",
    "render_row",
    "render_row_payload",
    "row_role",
]

SYSTEM_FORM_SOURCES = frozenset({"app", "hook"})


class ContextRow(BaseModel):
    """A committed context row, as servers, audit and telemetry see it (never users).

    Attributes:
        seq: Its position in the session's log.
        kind: ``instruction``, ``notice``, ``tools``, ``memory`` or ``summary`` (a
            compaction's, ``context/_summary.py``).
        source: ``app``, ``hook``, ``tool``, ``memory``, ``late-answer`` or ``compaction``.
        content: The text (instruction, notice and summary rows).
        disable, enable: Tool names (tools rows).
        memories: ``[{"id", "content"}]`` (memory rows).
        cursor: The step_context hook's cursor stored with its batch, if any.
        origin: Which queue entry, request key or call site produced it.
        created_at: Unix time of the commit.

    Example::

        for row in await executor.context_rows("session-1"):   # audit: what the model was told
            print(row.seq, row.kind, row.source, row.content or row.disable or row.memories)
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


def row_role(source: str, family: Family = "openai") -> str:
    """The message role a row of ``source`` is sent with to a ``family`` provider.

    Example::

        assert row_role("app", "openai") == "system"       # operator authority, mid-conversation
        assert row_role("tool", "openai") == "user"         # what a tool adds has none
    """
    if source in SYSTEM_FORM_SOURCES and traits(family).row_form == "system":
        return "system"
    return "user"


def render_row(payload: dict[str, Any], family: Family = "openai") -> dict[str, Any]:
    """The model message for a row payload sent to a ``family`` provider (module docstring).

    Example::

        message = render_row({"kind": "instruction", "source": "app", "content": "Be brief."})
        assert message["role"] == "system" and "Be brief." in message["content"]
    """
    text = envelope(payload["kind"], payload["source"], escape_envelopes(_body(payload)))
    return {"role": row_role(payload["source"], family), "content": text}


def render_row_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """The model message for a row payload on the OpenAI wire format (``render_row``).

    Example::

        payload = {"kind": "notice", "source": "tool", "content": "The order shipped."}
        assert render_row_payload(payload) == render_row(payload, "openai")
    """
    return render_row(payload, "openai")


def model_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message as the model is sent it, whether the loop just made it or a turn read it from
    the log: without the bookkeeping keys of stored records (those starting with ``_``: see
    :mod:`helix_stream.session._records`) and with its text escaped so that it cannot open or
    close an envelope. The one rule for both, so a message is the same bytes on every call.

    Example::

        stored = {"role": "user", "content": "Hi", "_ui_id": "m1"}   # a record's bookkeeping key
        assert model_message(stored) == {"role": "user", "content": "Hi"}
    """
    return escape_message({k: v for k, v in message.items() if not k.startswith("_")})


def render_record(record: LogRecord, family: Family = "openai") -> dict[str, Any]:
    """A log record as a ``family`` provider is sent it: a row rendered (:func:`render_row`),
    a message as :func:`model_message` makes it.

    Example::

        from helix_stream.store import LogRecord

        record = LogRecord(seq=3, role="context", created_at=0.0,
                           payload={"kind": "instruction", "source": "app", "content": "Be brief."})
        assert render_record(record, "anthropic")["role"] == "user"   # no mid-conversation system
    """
    if record.role == "context":
        return render_row(record.payload, family)
    return model_message(record.payload)
