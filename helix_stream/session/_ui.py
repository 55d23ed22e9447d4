"""A session's stored UI messages (``useChat``'s ``UIMessage``s), rebuilt from its log.

The assistant records of one turn are replayed as the chunks the live stream sent and folded
by the same UI mapper and fold the live stream uses, so a reloaded chat shows exactly what the
stream showed: the same parts, the same masked tool errors, the same not-executed outputs.
Context rows are never among them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._messages import message_text
from ..chunks import (
    Chunk,
    DataChunk,
    FinishStep,
    Start,
    StartStep,
    SteeringMessage,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolAuthorizationRequest,
    ToolCancelled,
    ToolInputAvailable,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    ToolResultChunk,
)
from ..store import LogRecord
from ..tools import approval_id
from ._records import AssistantRecord, ToolRecord, UserRecord, ui_message_id

__all__ = ["ui_messages"]

OnError = Callable[[BaseException], str]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


Stored = UserRecord | AssistantRecord | ToolRecord


def _decode(record: LogRecord) -> Stored:
    if record.role == "assistant":
        return AssistantRecord.decode(record.payload)
    if record.role == "tool":
        return ToolRecord.decode(record.payload)
    return UserRecord.decode(record.payload)


def ui_messages(
    log: Sequence[LogRecord],
    *,
    client_version: int = 7,
    on_error: OnError | None = None,
    send_sources: bool = False,
    sign_ins: Mapping[str, tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """The log as UIMessages: one per user message, one per assistant turn; no rows.
    ``sign_ins``: the calls still waiting for a sign-in (call id -> strategy, URL), whose
    sign-in links are shown as the live stream showed them. A steered message (sent while a
    turn ran) is, for ``ai@7`` clients, a ``steering-message`` part of the answer it was
    delivered to, in place, as the live stream showed it; for older clients a user message
    between the answer's two halves (the second under an id of its own)."""
    assistant = functools.partial(
        _assistant,
        client_version=client_version,
        on_error=on_error,
        send_sources=send_sources,
        sign_ins=sign_ins or {},
    )
    in_place = client_version >= 7
    out: list[dict[str, Any]] = []
    turn: list[tuple[int, Stored]] = []  # (seq, record) of one turn
    for record in log:
        if record.role == "context":
            continue
        stored = _decode(record)
        if isinstance(stored, UserRecord) and not (in_place and stored.steered):
            out.extend([assistant(turn, _turn_id(turn, out))] if _answers(turn) else [])
            out.append(_user(record.seq, record.role, stored))
            turn = []
            continue
        if (
            isinstance(stored, AssistantRecord)
            and _answers(turn)
            and _turn_id(turn, ()) != _id(record.seq, stored)
        ):
            # Another turn's message; the steered messages its first commit delivered open it
            # (its stream showed them first).
            kept, tail = _split_tail(turn)
            out.append(assistant(kept, _turn_id(kept, out)))
            turn = tail
        if not isinstance(stored, ToolRecord) or turn:
            turn.append((record.seq, stored))
    if _answers(turn):
        out.append(assistant(turn, _turn_id(turn, out)))
    return out


def _split_tail(
    turn: list[tuple[int, Stored]],
) -> tuple[list[tuple[int, Stored]], list[tuple[int, Stored]]]:
    """``turn`` without the steered messages it ends with, and those."""
    end = len(turn)
    while end and isinstance(turn[end - 1][1], UserRecord):
        end -= 1
    return turn[:end], turn[end:]


def _answers(turn: Sequence[tuple[int, Stored]]) -> bool:
    return any(isinstance(r, AssistantRecord) for _, r in turn)


def _turn_id(turn: Sequence[tuple[int, Stored]], out: Sequence[Mapping[str, Any]]) -> str:
    """The UI message id of a turn's records: its first answer's; one ``out`` has already
    (the second half of an answer a steered message split, for older clients) gets its own."""
    seq, first = next((s, r) for s, r in turn if isinstance(r, AssistantRecord))
    assert isinstance(first, AssistantRecord)
    message_id = _id(seq, first)
    if any(m.get("id") == message_id for m in out):
        return f"{message_id}-{seq}"
    return message_id


def _id(seq: int, record: AssistantRecord | ToolRecord) -> str:
    """The UI message id of a turn's first record (that of the turn)."""
    message_id = record.message_id if isinstance(record, AssistantRecord) else None
    return ui_message_id(message_id, seq)


def _user(seq: int, role: str, record: UserRecord) -> dict[str, Any]:
    # A message with files keeps the parts as the user sent them (the model's content parts
    # do not say a file's media type or name).
    parts = record.parts or [{"type": "text", "text": message_text(record.message)}]
    return {"id": ui_message_id(record.message_id, seq), "role": role, "parts": parts}


def _assistant(
    records: Sequence[tuple[int, Stored]],
    message_id: str,
    *,
    client_version: int,
    on_error: OnError | None,
    send_sources: bool,
    sign_ins: Mapping[str, tuple[str, str]],
) -> dict[str, Any]:
    # Imported here: the transformers bring in Starlette, which `import helix_stream` must not.
    from ..transformers._fold import UIMessageFold
    from ..transformers._mapper import UIChunkMapper

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
    for chunk in _replay(message_id, records, sign_ins):
        mapper.handle(chunk)
    mapper.end()
    message = fold.message
    if any(isinstance(r, AssistantRecord) and r.interrupted for _, r in records):
        # The stream stopped mid-answer (an error, a disconnect): say so, as metadata.
        message["metadata"] = {**message.get("metadata", {}), "interrupted": True}
    failed = [r.failed for _, r in records if isinstance(r, AssistantRecord) and r.failed]
    if failed:
        # The turn failed: its error's code (what the live stream's `error` chunk reported).
        message["metadata"] = {**message.get("metadata", {}), "error": failed[-1]}
    return message


def _replay(
    message_id: str,
    records: Sequence[tuple[int, Stored]],
    sign_ins: Mapping[str, tuple[str, str]],
) -> Iterator[Chunk]:
    """The chunks the live stream sent for one assistant turn's records."""
    yield Start(message_id=message_id)
    names: dict[str, str] = {}
    step_open = False
    steered = False  # the open step began with a steered message (its commit's chunk)
    written: Sequence[DataChunk] = ()  # the step's data parts, shown after its tool results
    for seq, record in records:
        if isinstance(record, ToolRecord):
            yield _tool_result(names.get(record.call_id, ""), record)
            continue
        if not (steered and isinstance(record, AssistantRecord)):
            yield from written
            written = ()
            if step_open:
                yield FinishStep(step_number=0, finish_reason="tool-calls")
            yield StartStep(step_number=0)
            step_open = True
        if isinstance(record, UserRecord):  # steered: delivered at this step's commit
            yield SteeringMessage(id=ui_message_id(record.message_id, seq), parts=record.ui_parts())
            steered = True
            continue
        steered = False
        written = record.data
        yield from record.sources
        text = message_text(record.message)
        if text:
            part = f"text-{seq}"
            yield from (TextStart(id=part), TextDelta(id=part, delta=text), TextEnd(id=part))
        for call in record.message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
            yield ToolInputAvailable(
                tool_call_id=call["id"],
                tool_name=call["function"]["name"],
                input=_json(call["function"]["arguments"]),
            )
        for call_id in record.awaiting_approval:
            yield ToolApprovalRequest(approval_id=approval_id(call_id), tool_call_id=call_id)
        for call in record.message.get("tool_calls") or []:
            if call["id"] in sign_ins:
                strategy, url = sign_ins[call["id"]]
                yield ToolAuthorizationRequest(tool_call_id=call["id"], strategy=strategy, url=url)
    yield from written
    if step_open:
        yield FinishStep(step_number=0, finish_reason="stop")


def _tool_result(name: str, record: ToolRecord) -> ToolResultChunk:
    call_id, content = record.call_id, message_text(record.message)
    if record.status == "cancelled":
        return ToolCancelled(tool_call_id=call_id)
    if record.status == "error":
        return ToolOutputError(tool_call_id=call_id, error_text=content)
    if record.status == "denied":
        return ToolOutputDenied(tool_call_id=call_id, reason=_json(content).get("reason"))
    if record.status == "not_executed":
        reason = _json(content).get("reason", "tool_inactive")
        return ToolNotExecuted(tool_call_id=call_id, tool_name=name, reason=reason)
    parts = record.message.get("content")
    if isinstance(parts, list):  # a tool's images: its content parts (loop/_tool_media.py)
        return ToolOutputAvailable(tool_call_id=call_id, output=list(parts))
    return ToolOutputAvailable(tool_call_id=call_id, output=_json(content))
