"""The records a session stores for its messages: typed, with their encoding.

A session's log holds each message in the model's form (OpenAI format: ``role``, ``content``,
``tool_calls``, ``tool_call_id``), as it was sent or received, plus the bookkeeping the stored
UI messages are rebuilt from (:mod:`._ui`). The bookkeeping keys start with ``_``, which
:func:`helix_stream.context.model_message` leaves out of every request. Their names are what
stores on disk hold, so they never change:

* user (and system) messages: ``_message_id`` (the client's UIMessage id), ``_parts`` (the UI
  parts as the client sent them: files keep their media type and name), ``_steered`` (sent
  while a turn ran, and delivered to it: session/_steering.py);
* assistant messages: ``_message_id`` (the turn's UI message id), ``_awaiting_approval`` (the
  calls waiting for an approval), ``_data`` (the ``data-*`` parts the step's tools wrote),
  ``_sources`` (the sources the model cited), ``_interrupted`` (the text of a step cut short),
  ``_failed`` (the error code of a turn that failed: ``model_rate_limited``, ...);
* tool messages: ``_status`` (``output``, ``error``, ``not_executed``, ``denied``, or
  ``cancelled``: the call waited for an answer, and a new user message came first).

This module owns those keys: :class:`UserRecord`, :class:`AssistantRecord` and
:class:`ToolRecord` (``encode()`` to a payload, ``decode(payload)`` back), what a finished step
stores (:func:`step_records`), the ids of new assistant messages (:func:`new_message_id`) and
the UI message id of a stored one (:func:`ui_message_id`).
Every writer and reader of the keys goes through it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from .._messages import message_text
from ..chunks import DataChunk, SourceUrl
from ..steps import StepResult, ToolStatus
from ..tools import Tool

__all__ = [
    "AssistantRecord",
    "ToolRecord",
    "UserRecord",
    "failed_record",
    "interrupted_record",
    "new_message_id",
    "step_records",
    "ui_message_id",
]

_MESSAGE_ID = "_message_id"
_PARTS = "_parts"
_AWAITING_APPROVAL = "_awaiting_approval"
_DATA = "_data"
_SOURCES = "_sources"
_INTERRUPTED = "_interrupted"
_FAILED = "_failed"
_STATUS = "_status"
_STEERED = "_steered"

KEYS = (
    _MESSAGE_ID,
    _PARTS,
    _STEERED,
    _AWAITING_APPROVAL,
    _DATA,
    _SOURCES,
    _INTERRUPTED,
    _FAILED,
    _STATUS,
)
# How a stored call ended: a step's statuses, and "cancelled" (settled when a turn opens).
StoredStatus = ToolStatus | Literal["cancelled"]
_STATUSES: frozenset[str] = frozenset(get_args(ToolStatus)) | {"cancelled"}


def new_message_id() -> str:
    """The id of a new assistant UI message (when neither the caller nor the session has one)."""
    return f"msg-{uuid.uuid4().hex}"


def ui_message_id(message_id: str | None, seq: int) -> str:
    """The UI message id of a stored message: its own, or (one stored without) its log place."""
    return message_id or f"log-{seq}"


def _message(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The model's part of a payload (the bookkeeping left out)."""
    return {k: v for k, v in payload.items() if not k.startswith("_")}


@dataclass(frozen=True, slots=True, kw_only=True)
class UserRecord:
    """A user (or system) message as stored.

    Attributes:
        message: The message the model is sent (``role``, ``content``).
        message_id: The client's UIMessage id, if it gave one.
        parts: The UI parts as the client sent them, when they are more than text.
        steered: The user sent it while a turn ran, which took it in at a step boundary.
    """

    message: Mapping[str, Any]
    message_id: str | None = None
    parts: Sequence[Mapping[str, Any]] | None = None
    steered: bool = False

    def encode(self) -> dict[str, Any]:
        payload = dict(self.message)
        if self.message_id is not None:
            payload[_MESSAGE_ID] = self.message_id
        if self.parts is not None:
            payload[_PARTS] = [dict(p) for p in self.parts]
        if self.steered:
            payload[_STEERED] = True
        return payload

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> UserRecord:
        return cls(
            message=_message(payload),
            message_id=payload.get(_MESSAGE_ID),
            parts=payload.get(_PARTS),
            steered=payload.get(_STEERED) is True,
        )

    def ui_parts(self) -> list[dict[str, Any]]:
        """Its UI parts: as the client sent them, or its text."""
        if self.parts:
            return [dict(p) for p in self.parts]
        return [{"type": "text", "text": message_text(self.message)}]


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantRecord:
    """An assistant message as stored: one step's, or the text of a step cut short.

    Attributes:
        message: The message the model sent (``content``, ``tool_calls``).
        message_id: The UI message id of the turn it belongs to.
        awaiting_approval: The ids of its calls that wait for an approval.
        data: The data parts the step's tools wrote (shown after the tool results).
        sources: The sources the model cited.
        interrupted: The step was cut short (a failure, a disconnect): the text is what had
            streamed.
        failed: The error code of the turn's failure (a ``HelixError`` code), when it failed.
    """

    message: Mapping[str, Any]
    message_id: str | None = None
    awaiting_approval: Sequence[str] = ()
    data: Sequence[DataChunk] = ()
    sources: Sequence[SourceUrl] = ()
    interrupted: bool = False
    failed: str | None = None

    def encode(self) -> dict[str, Any]:
        payload = {**self.message, _MESSAGE_ID: self.message_id}
        if self.awaiting_approval:
            payload[_AWAITING_APPROVAL] = list(self.awaiting_approval)
        if self.data:
            payload[_DATA] = [{"name": d.name, "id": d.id, "data": d.data} for d in self.data]
        if self.sources:
            payload[_SOURCES] = [
                {"sourceId": s.source_id, "url": s.url, "title": s.title} for s in self.sources
            ]
        if self.interrupted:
            payload[_INTERRUPTED] = True
        if self.failed:
            payload[_FAILED] = self.failed
        return payload

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> AssistantRecord:
        return cls(
            message=_message(payload),
            message_id=payload.get(_MESSAGE_ID),
            awaiting_approval=tuple(payload.get(_AWAITING_APPROVAL) or ()),
            data=tuple(
                DataChunk(name=d["name"], data=d["data"], id=d.get("id"))
                for d in payload.get(_DATA) or ()
            ),
            sources=tuple(
                SourceUrl(source_id=s["sourceId"], url=s["url"], title=s.get("title"))
                for s in payload.get(_SOURCES) or ()
            ),
            interrupted=bool(payload.get(_INTERRUPTED)),
            failed=payload.get(_FAILED),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRecord:
    """A tool message as stored.

    Attributes:
        message: The message the model is sent (``tool_call_id``, ``content``).
        status: How the call ended.
    """

    message: Mapping[str, Any]
    status: StoredStatus = "output"

    @property
    def call_id(self) -> str:
        return str(self.message.get("tool_call_id", ""))

    def encode(self) -> dict[str, Any]:
        return {**self.message, _STATUS: self.status}

    @classmethod
    def decode(cls, payload: Mapping[str, Any]) -> ToolRecord:
        status = payload.get(_STATUS, "output")
        return cls(message=_message(payload), status=status if status in _STATUSES else "output")


def step_records(
    step: StepResult, *, message_id: str, tools: Mapping[str, Tool]
) -> list[dict[str, Any]]:
    """A finished step's messages as stored: the assistant message with the turn's id, the
    calls it leaves waiting for an approval, its data parts and sources; each tool message with
    its call's status."""
    statuses = {r.tool_call_id: r.status for r in step.tool_results}
    approvals = [
        r.tool_call_id
        for r in step.pending
        if (tool := tools.get(r.tool_name)) is not None and tool.pauses_for == "approval"
    ]
    records: list[dict[str, Any]] = []
    for message in step.response_messages:
        if message["role"] == "assistant":
            record: AssistantRecord | ToolRecord = AssistantRecord(
                message=message,
                message_id=message_id,
                awaiting_approval=approvals,
                data=step.data,
                sources=step.sources,
            )
        else:
            status = statuses.get(message.get("tool_call_id", ""), "output")
            record = ToolRecord(message=message, status=status)
        records.append(record.encode())
    return records


def failed_record(record: dict[str, Any], error: BaseException) -> dict[str, Any]:
    """``record`` (a step cut short) marked with the code of the error that failed its turn,
    which the stored chat shows (``metadata.error``); never the error's text."""
    return {**record, _FAILED: str(getattr(error, "code", "internal_error"))}


def interrupted_record(text: str, message_id: str) -> dict[str, Any]:
    """The stored assistant message of a step cut short: the text it had streamed."""
    message = {"role": "assistant", "content": text}
    return AssistantRecord(message=message, message_id=message_id, interrupted=True).encode()
