"""Tool calls a paused turn left waiting: approvals, client tools and sign-ins.

A turn pauses when a call needs the app's approval, a client's answer, or the user's sign-in
(a call parked by its tool's ``auth=``; its answer is recorded by the sign-in callback,
``Executor.complete_authorization``). Answers are recorded
on the session (``Executor.answer``) or passed to the next run (``run(..., answers=...)``, what
the chat server does). The next run settles every waiting call before it calls the model:
:func:`plan_resume` decides here what becomes of each, from its answer, and the loop's resume
step (``loop/_resume.py``) runs the ones to run with the step's tool runner:

* approved → the tool runs — unless it was switched off meanwhile, by a row *or by a switch-off
  still in the queue*: then nothing runs and the call gets ``tool_inactive`` (the approval
  answers "may this call run", not "override the switch");
* denied → a denied result;
* a client answer → its output; one that came after ``client_tool_timeout`` → the call gets a
  timeout result and the answer is delivered as a ``notice`` row with source ``late-answer``;
* signed in → the call alone runs again, with the token, as the re-run right after its
  sign-in (it never parks again: the loop guard); a refused or failed sign-in → the error
  result the callback recorded ("The user did not authorize ...");
* no answer but a new user message → a cancelled result (the conversation must stay valid).

An approved call that needs a sign-in parks like any other (the turn pauses again at once);
with a new user message it cannot wait, and its miss is its error result.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from .._result_size import cut_text
from ..chunks import (
    Chunk,
    ToolCancelled,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
)
from ..context import LATE_ANSWER_SOURCE, validate_items
from ..errors import StateError
from ..loop._env import Resume, ResumeCall, Resumed
from ..loop._tools import not_executed_message, tool_message
from ..models._parse import parse_arguments
from ..steps import ToolCall, ToolResult, with_origin
from ..store import LogRecord
from ..tools import Tool, dump_output
from ._meta import Answer
from ._records import AssistantRecord, StoredStatus, ToolRecord, ui_message_id

__all__ = ["ResumePlan", "WaitingCall", "check_answerable", "late_answer_row", "plan_resume"]


@dataclass(frozen=True, slots=True)
class WaitingCall:
    """A call of the last assistant message that has no tool message yet.

    Attributes:
        call: The call.
        message_id: The stored UI message id of its assistant message.
        ui_message_id: The id that message has in ``ui_messages`` (the same, when stored).
    """

    call: ToolCall
    message_id: str | None
    ui_message_id: str


def waiting_calls(log: Sequence[LogRecord]) -> list[WaitingCall]:
    """The calls of the last assistant message that have no tool message yet."""
    answered = {r.payload.get("tool_call_id") for r in log if r.role == "tool"}
    for record in reversed(log):
        if record.role == "assistant" and record.payload.get("tool_calls"):
            out = []
            message_id = AssistantRecord.decode(record.payload).message_id
            ui_id = ui_message_id(message_id, record.seq)
            for raw in record.payload["tool_calls"]:
                if raw["id"] in answered:
                    continue
                arguments = raw["function"]["arguments"]
                call = ToolCall(
                    id=raw["id"],
                    name=raw["function"]["name"],
                    input=parse_arguments(arguments),
                    arguments=arguments,
                )
                out.append(WaitingCall(call, message_id, ui_id))
            return out
        if record.role == "user":
            return []
    return []


Wait = Literal["approval", "client", "authorization"]


def _waits_for(call: ToolCall, tools: Mapping[str, Tool], answer: Answer | None) -> Wait:
    """What a waiting call waits for. A call of a tool with a body that needs no approval can
    only have parked on a sign-in: a client's "answer" to it is no answer."""
    if answer is not None and answer.authorization is not None:
        return "authorization"
    tool = tools.get(call.name)
    if tool is None or tool.pauses_for == "client":
        return "client"
    return "approval" if tool.pauses_for == "approval" else "authorization"


def _signed_in(answer: Answer | None) -> bool:
    """The sign-in the call waits for has completed (with a token, or not)."""
    return answer is not None and answer.authorization not in (None, "waiting")


def check_answerable(
    waiting: Sequence[WaitingCall],
    answers: Mapping[str, Answer],
    tools: Mapping[str, Tool],
    *,
    has_new_input: bool,
    deadline: float | None,
) -> None:
    """Refuse (before anything is written) a turn that could not settle its waiting calls.

    Raises:
        StateError: a call still waits for its approval, its client's answer or the user's
            sign-in, and there is no new user message to move on with.
    """
    if has_new_input:
        return
    for waiting_call in waiting:
        call = waiting_call.call
        answer = answers.get(call.id)
        waits = _waits_for(call, tools, answer)
        if waits == "authorization":
            if not _signed_in(answer):
                strategy = answer.strategy if answer is not None else None
                to = f" to {strategy!r}" if strategy else ""
                raise StateError(
                    f"call {call.id!r} ({call.name}) is still waiting for the user to sign in{to}"
                )
        elif waits == "approval":
            if answer is None or not answer.is_approval:
                raise StateError(
                    f"call {call.id!r} ({call.name}) is still waiting for its approval"
                )
        elif answer is None and (deadline is None or time.time() <= deadline):
            raise StateError(
                f"call {call.id!r} ({call.name}) is still waiting for the client's answer"
            )


def late_answer_row(tool_name: str, call_id: str, output: Any) -> dict[str, Any]:
    """The notice row a late client answer becomes (capped: a row is at most 32 KiB)."""
    text = dump_output(output)
    if len(text.encode()) > 16_000:
        text = text.encode()[:16_000].decode(errors="ignore") + " …(truncated)"
    item = {
        "kind": "notice",
        "content": f"A late answer arrived from the client tool {tool_name!r} ({call_id}): {text}",
    }
    (row,) = validate_items([item], forced_source=LATE_ANSWER_SOURCE)
    return {**row, "origin": {"type": LATE_ANSWER_SOURCE, "tool_call_id": call_id}}


def _message(call: ToolCall, status: StoredStatus, content: str) -> dict[str, Any]:
    return ToolRecord(message=tool_message(call.id, content), status=status).encode()


def _cancelled(call: ToolCall, what: str) -> tuple[dict[str, Any], Chunk]:
    content = json.dumps(
        {"status": "cancelled", "message": f"No {what} came before the next message."}
    )
    return _message(call, "cancelled", content), ToolCancelled(tool_call_id=call.id)


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """What becomes of a paused turn's waiting calls: the loop's resume step
    (:class:`~helix_stream.loop._resume.Resume`: each call settled here, or to run), and the
    late-answer rows the first commit writes."""

    resume: Resume
    rows: list[dict[str, Any]]
    tools: Mapping[str, Tool]

    def results(self, resumed: Resumed | None) -> list[ToolResult]:
        """The results of the calls that ended (ran, denied, answered, failed; not the
        cancelled ones nor those waiting again), in the waiting order, for ``action.result``."""
        ran = resumed.results if resumed is not None else {}
        out = []
        for waiting in self.resume.calls:
            call = waiting.call
            if waiting.settled is not None:
                result = _result_of(call, waiting.settled[1])
                if result is not None:
                    out.append(with_origin(result, self.tools.get(call.name)))
            elif call.id in ran and ran[call.id].status != "pending":
                out.append(ran[call.id])
        return out

    def messages(self, resumed: Resumed | None) -> list[dict[str, Any]]:
        """The stored tool messages, in the waiting order, once the resume step ran: a call
        that parked on a sign-in again has none yet (it keeps waiting)."""
        ran = resumed.ran if resumed is not None else {}
        out = []
        for waiting in self.resume.calls:
            if waiting.settled is not None:
                out.append(waiting.settled[0])
            elif waiting.call.id in ran:
                message, status = ran[waiting.call.id]
                record = ToolRecord(message=message, status=cast(StoredStatus, status))
                out.append(record.encode())
        return out


def plan_resume(
    waiting: Sequence[WaitingCall],
    answers: Mapping[str, Answer],
    *,
    tools: Mapping[str, Tool],
    inactive: frozenset[str],
    deadline: float | None,
    moved_on: bool,
    max_bytes: int | None = None,
) -> ResumePlan:
    """Decide each waiting call from its answer (see the module docstring). Callers have run
    :func:`check_answerable` first: a call without an answer here is settled as cancelled (a
    new user message moved the conversation on). A client's answer over ``max_bytes`` (or its
    tool's own ``max_result_bytes``) is cut (``_result_size.py``)."""
    calls: list[ResumeCall] = []
    rows: list[dict[str, Any]] = []
    for waiting_call in waiting:
        call = waiting_call.call
        answer = answers.get(call.id)
        waits = _waits_for(call, tools, answer)
        settled: tuple[dict[str, Any], Chunk] | None
        signed_in = False
        if waits == "client":
            tool = tools.get(call.name)
            limit = (tool.max_result_bytes if tool is not None else None) or max_bytes
            settled, row = _client(call, answer, deadline, limit)
            rows.extend(row)
        elif waits == "approval":
            settled = _approval(call, answer, inactive)
        else:
            settled = _authorization(call, answer, inactive)
            signed_in = settled is None
        calls.append(
            ResumeCall(
                call=call,
                ui_message_id=waiting_call.ui_message_id,
                settled=settled,
                signed_in=signed_in,
            )
        )
    return ResumePlan(resume=Resume(calls=tuple(calls), moved_on=moved_on), rows=rows, tools=tools)


def _result_of(call: ToolCall, chunk: Chunk) -> ToolResult | None:
    """The result a settled call's chunk says it ended with (``None``: cancelled)."""
    base: dict[str, Any] = {"tool_call_id": call.id, "tool_name": call.name}
    if isinstance(chunk, ToolOutputAvailable):
        return ToolResult(**base, status="output", output=chunk.output)
    if isinstance(chunk, ToolOutputError):
        return ToolResult(**base, status="error", error=chunk.error_text)
    if isinstance(chunk, ToolOutputDenied):
        return ToolResult(**base, status="denied", reason=chunk.reason)
    if isinstance(chunk, ToolNotExecuted):
        return ToolResult(**base, status="not_executed", reason=chunk.reason)
    return None


def _inactive(call: ToolCall) -> tuple[dict[str, Any], Chunk]:
    """The message and chunk of a waiting call whose tool was switched off meanwhile (by a row
    or a switch-off still in the queue): nothing runs."""
    content = not_executed_message(call, "tool_inactive")
    chunk = ToolNotExecuted(tool_call_id=call.id, tool_name=call.name, reason="tool_inactive")
    return _message(call, "not_executed", content), chunk


def _authorization(
    call: ToolCall, answer: Answer | None, inactive: frozenset[str]
) -> tuple[dict[str, Any], Chunk] | None:
    """The tool message and chunk of a call that waited for a sign-in; ``None``: run it
    again (the user signed in)."""
    if not _signed_in(answer):
        return _cancelled(call, "sign-in")
    assert answer is not None
    if call.name in inactive:
        return _inactive(call)
    if answer.authorization == "authorized":
        return None
    text = answer.reason or f"The user did not authorize {answer.strategy!r}."
    return _message(call, "error", text), ToolOutputError(tool_call_id=call.id, error_text=text)


def _approval(
    call: ToolCall, answer: Answer | None, inactive: frozenset[str]
) -> tuple[dict[str, Any], Chunk] | None:
    """The tool message and chunk of a call that needed approval; ``None``: run it."""
    if answer is None or not answer.is_approval:
        return _cancelled(call, "approval")
    if call.name in inactive:
        return _inactive(call)
    if answer.approved:
        return None
    reason = answer.reason
    content = json.dumps({"status": "denied", "reason": reason or "The user denied this call."})
    return _message(call, "denied", content), ToolOutputDenied(tool_call_id=call.id, reason=reason)


def _client(
    call: ToolCall, answer: Answer | None, deadline: float | None, limit: int | None = None
) -> tuple[tuple[dict[str, Any], Chunk], list[dict[str, Any]]]:
    """The tool message and chunk of a client tool call; a late answer becomes a row."""
    if answer is not None and (deadline is None or answer.at <= deadline):
        content, cut = cut_text(dump_output(answer.output), limit)
        shown = content if cut else answer.output  # a cut answer shows what the model read
        output = ToolOutputAvailable(tool_call_id=call.id, output=shown)
        return (_message(call, "output", content), output), []
    if answer is None and (deadline is None or time.time() <= deadline):
        return _cancelled(call, "answer"), []
    content = json.dumps({"status": "timeout", "message": "The client did not answer in time."})
    rows = [late_answer_row(call.name, call.id, answer.output)] if answer is not None else []
    chunk = ToolOutputError(tool_call_id=call.id, error_text=content)
    return (_message(call, "error", content), chunk), rows
