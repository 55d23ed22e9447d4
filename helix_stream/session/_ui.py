"""A session's stored UI messages (``useChat``'s ``UIMessage``s), rebuilt from its log.

The assistant records of one turn are replayed as the chunks the live stream sent and folded
by the same UI mapper and fold the live stream uses, so a reloaded chat shows exactly what the
stream showed: the same parts, the same masked tool errors, the same not-executed outputs.
Context rows are never among them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._messages import message_text
from ..chunks import (
    Chunk,
    DataChunk,
    FinishStep,
    SourceUrl,
    Start,
    StartStep,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolInputAvailable,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
)
from ..store import LogRecord
from ..tools import approval_id

__all__ = ["ui_messages"]

OnError = Callable[[BaseException], str]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def ui_messages(
    log: Sequence[LogRecord],
    *,
    client_version: int = 7,
    on_error: OnError | None = None,
    send_sources: bool = False,
) -> list[dict[str, Any]]:
    """The log as UIMessages: one per user message, one per assistant turn; no rows."""
    assistant = functools.partial(
        _assistant, client_version=client_version, on_error=on_error, send_sources=send_sources
    )
    out: list[dict[str, Any]] = []
    turn: list[LogRecord] = []
    for record in log:
        if record.role == "context":
            continue
        if record.role == "assistant" and turn and _message_id(turn[0]) != _message_id(record):
            out.append(assistant(turn))
            turn = []
        if record.role in ("user", "system"):
            if turn:
                out.append(assistant(turn))
                turn = []
            out.append(_user(record))
        elif record.role == "assistant" or (record.role == "tool" and turn):
            turn.append(record)
    if turn:
        out.append(assistant(turn))
    return out


def _message_id(record: LogRecord) -> str:
    return str(record.payload.get("_message_id") or f"log-{record.seq}")


def _user(record: LogRecord) -> dict[str, Any]:
    payload = record.payload
    # A message with files keeps the parts as the user sent them (the model's content parts
    # do not say a file's media type or name).
    parts = payload.get("_parts") or [{"type": "text", "text": message_text(payload)}]
    return {
        "id": payload.get("_message_id") or f"log-{record.seq}",
        "role": record.role,
        "parts": parts,
    }


def _assistant(
    records: Sequence[LogRecord],
    *,
    client_version: int,
    on_error: OnError | None,
    send_sources: bool,
) -> dict[str, Any]:
    # Imported here: the transformers bring in Starlette, which `import helix_stream` must not.
    from ..transformers._fold import UIMessageFold
    from ..transformers._mapper import UIChunkMapper

    message_id = _message_id(records[0])
    fold = UIMessageFold(message_id=message_id)
    mapper = UIChunkMapper(
        client_version=client_version,
        send_reasoning=True,
        send_sources=send_sources,
        send_start=True,
        send_finish=True,
        message_metadata=None,
        message_id=message_id,
        generate_message_id=None,
        on_error=on_error,
        continued_message=None,
        fold=fold,
    )
    for chunk in _replay(records):
        mapper.handle(chunk)
    mapper.end()
    message = fold.message
    if any(r.payload.get("_interrupted") for r in records):
        # The stream stopped mid-answer (an error, a disconnect): say so, as metadata.
        message["metadata"] = {**message.get("metadata", {}), "interrupted": True}
    return message


def _replay(records: Sequence[LogRecord]) -> Iterator[Chunk]:
    """The chunks the live stream sent for one assistant turn's records."""
    yield Start(message_id=_message_id(records[0]))
    names: dict[str, str] = {}
    step_open = False
    written: list[dict[str, Any]] = []  # the step's data parts, shown after its tool results
    for record in records:
        payload = record.payload
        if record.role == "assistant":
            yield from _data(written)
            written = payload.get("_data") or []
            if step_open:
                yield FinishStep(step_number=0, finish_reason="tool-calls")
            yield StartStep(step_number=0)
            step_open = True
            for source in payload.get("_sources") or []:
                yield SourceUrl(
                    source_id=source["sourceId"], url=source["url"], title=source.get("title")
                )
            text = message_text(payload)
            if text:
                part = f"text-{record.seq}"
                yield from (TextStart(id=part), TextDelta(id=part, delta=text), TextEnd(id=part))
            for call in payload.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                yield ToolInputAvailable(
                    tool_call_id=call["id"],
                    tool_name=call["function"]["name"],
                    input=_json(call["function"]["arguments"]),
                )
            for call_id in payload.get("_awaiting_approval") or []:
                yield ToolApprovalRequest(approval_id=approval_id(call_id), tool_call_id=call_id)
        else:
            call_id = payload.get("tool_call_id", "")
            yield _tool_result(call_id, names.get(call_id, ""), payload)
    yield from _data(written)
    if step_open:
        yield FinishStep(step_number=0, finish_reason="stop")


def _data(written: list[dict[str, Any]]) -> Iterator[Chunk]:
    for part in written:
        yield DataChunk(name=part["name"], data=part["data"], id=part.get("id"))


def _tool_result(call_id: str, name: str, payload: dict[str, Any]) -> Chunk:
    content = message_text(payload)
    status = payload.get("_status", "output")
    if status == "error":
        return ToolOutputError(tool_call_id=call_id, error_text=content)
    if status == "denied":
        return ToolOutputDenied(tool_call_id=call_id, reason=_json(content).get("reason"))
    if status == "not_executed":
        reason = _json(content).get("reason", "tool_inactive")
        return ToolNotExecuted(tool_call_id=call_id, tool_name=name, reason=reason)
    return ToolOutputAvailable(tool_call_id=call_id, output=_json(content))
