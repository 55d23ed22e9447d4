"""Tool calls a paused turn left waiting: approvals, client tools and sign-ins.

A turn pauses when a call needs the app's approval, a client's answer, or the user's sign-in
(a call parked by its tool's ``auth=``; its answer is recorded by the sign-in callback,
``Executor.complete_authorization``). Answers are recorded
on the session (``Executor.answer``) or passed to the next run (``run(..., answers=...)``, what
the chat server does); the next run first settles every waiting call, then calls the model:

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

With a new user message, the waiting calls belong to an *earlier* UI message than the turn's
answer: their results are sent as :class:`~helix_stream.chunks.ToolSettled` chunks naming that
message (and not announced again), so a chat UI shows each where a reload shows it.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from ..chunks import (
    Chunk,
    ToolCancelled,
    ToolInputAvailable,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    ToolSettled,
)
from ..context import LATE_ANSWER_SOURCE, validate_items
from ..errors import StateError
from ..loop._config import SessionLink, ToolRun
from ..loop._tools import ToolCalls, not_executed_message, tool_message
from ..models._parse import parse_arguments
from ..steps import ToolCall, ToolResult, with_origin
from ..store import LogRecord
from ..telemetry import Recorder
from ..tools import Tool, dump_output
from ._meta import Answer
from ._records import AssistantRecord, StoredStatus, ToolRecord, ui_message_id

__all__ = ["Settled", "Settlement", "WaitingCall", "check_answerable", "late_answer_row"]


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


_RESULTS = (ToolOutputAvailable, ToolOutputError, ToolOutputDenied, ToolNotExecuted, ToolCancelled)


@dataclass(frozen=True, slots=True)
class Settled:
    """What settling produced: tool messages in the waiting order, late-answer rows, and the
    results of the calls that ended (ran, denied, answered, failed; not the cancelled ones
    nor those waiting again), in the waiting order, for ``action.result``."""

    messages: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    results: list[ToolResult] = field(default_factory=list)


def _result_of(call: ToolCall, chunk: Chunk) -> ToolResult | None:
    """The result a settled call's chunk says it ended with (``None``: cancelled)."""
    base = {"tool_call_id": call.id, "tool_name": call.name}
    if isinstance(chunk, ToolOutputAvailable):
        return ToolResult(**base, status="output", output=chunk.output)
    if isinstance(chunk, ToolOutputError):
        return ToolResult(**base, status="error", error=chunk.error_text)
    if isinstance(chunk, ToolOutputDenied):
        return ToolResult(**base, status="denied", reason=chunk.reason)
    if isinstance(chunk, ToolNotExecuted):
        return ToolResult(**base, status="not_executed", reason=chunk.reason)
    return None


class Settlement:
    """Settles a paused turn's waiting calls. Iterate :meth:`chunks`, then read
    :meth:`outcome`. Callers have run :func:`check_answerable` first: a call without an
    answer here is settled as cancelled (a new user message moved the conversation on).

    ``moved_on``: the turn has a new user message, so its answer is a new UI message and the
    calls' results go to their own (earlier) message as ``ToolSettled`` chunks."""

    def __init__(
        self,
        waiting: Sequence[WaitingCall],
        answers: Mapping[str, Answer],
        *,
        tools: Mapping[str, Tool],
        inactive: frozenset[str],
        deadline: float | None,
        contexts: Mapping[str, Any],
        recorder: Recorder,
        session: SessionLink,
        moved_on: bool = False,
        tool_run: ToolRun | None = None,
    ) -> None:
        self._waiting = list(waiting)
        self._tool_run = tool_run if tool_run is not None else ToolRun()
        self._moved_on = moved_on
        self._answers = answers
        self._tools = tools
        self._inactive = inactive
        self._deadline = deadline
        self._contexts = contexts
        self._recorder = recorder
        self._session = session
        self._messages: dict[str, dict[str, Any]] = {}
        self._rows: list[dict[str, Any]] = []
        self._results: dict[str, ToolResult] = {}

    def outcome(self) -> Settled:
        # A call that parked on a sign-in again has no message yet: it keeps waiting.
        order = [w.call.id for w in self._waiting if w.call.id in self._messages]
        return Settled(
            messages=[self._messages[i] for i in order],
            rows=list(self._rows),
            results=[self._results[i] for i in order if i in self._results],
        )

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        earlier = {w.call.id: w for w in self._waiting} if self._moved_on else {}
        async with aclosing(self._settle()) as chunks:
            async for chunk in chunks:
                waiting = earlier.get(getattr(chunk, "tool_call_id", ""))
                if waiting is None:
                    yield chunk  # not about a waiting call (a tool's data part): as it is
                elif isinstance(chunk, _RESULTS):
                    name, message_id = waiting.call.name, waiting.ui_message_id
                    yield ToolSettled(message_id=message_id, tool_name=name, result=chunk)
                # else: the call's announcement; the earlier message shows the call already

    async def _settle(self) -> AsyncGenerator[Chunk, None]:
        to_run: list[ToolCall] = []
        signed_in: set[str] = set()
        for waiting_call in self._waiting:
            call = waiting_call.call
            yield ToolInputAvailable(tool_call_id=call.id, tool_name=call.name, input=call.input)
            answer = self._answers.get(call.id)
            waits = _waits_for(call, self._tools, answer)
            settled: tuple[dict[str, Any], Chunk] | None
            if waits == "client":
                settled = self._client(call, answer)
            elif waits == "approval":
                settled = self._approval(call, answer)
            else:
                settled = self._authorization(call, answer)
                if settled is None:
                    signed_in.add(call.id)
            if settled is None:
                to_run.append(call)
                continue
            self._messages[call.id], chunk = settled
            result = _result_of(call, chunk)
            if result is not None:
                self._results[call.id] = with_origin(result, self._tools.get(call.name))
            yield chunk
        if to_run:
            async with aclosing(self._run(to_run, frozenset(signed_in))) as chunks:
                async for chunk in chunks:
                    yield chunk

    async def _run(
        self, to_run: list[ToolCall], signed_in: frozenset[str]
    ) -> AsyncGenerator[Chunk, None]:
        """Run the approved and signed-in calls (the gate settled them: they run as they
        are); one that parks on a sign-in again gets no message and keeps waiting."""
        calls = ToolCalls(
            to_run,
            tools=self._tools,
            contexts=self._contexts,
            recorder=self._recorder,
            session=self._session,
            approved=frozenset(c.id for c in to_run),
            signed_in=signed_in,
            # After a new message nothing can wait: the conversation has moved on.
            can_park=not self._moved_on,
            clock=self._tool_run.clock,
            watch=self._tool_run.watch,
        )
        async with aclosing(calls.chunks()) as chunks:
            async for chunk in chunks:
                yield chunk
        outcome = calls.outcome()
        statuses = {r.tool_call_id: r.status for r in outcome.results}
        for message in outcome.messages:
            call_id = message["tool_call_id"]
            record = ToolRecord(message=message, status=statuses[call_id])
            self._messages[call_id] = record.encode()
        self._results.update((r.tool_call_id, r) for r in outcome.results)

    def _authorization(
        self, call: ToolCall, answer: Answer | None
    ) -> tuple[dict[str, Any], Chunk] | None:
        """The tool message and chunk of a call that waited for a sign-in; ``None``: run it
        again (the user signed in)."""
        if not _signed_in(answer):
            return _cancelled(call, "sign-in")
        assert answer is not None
        if call.name in self._inactive:
            content = not_executed_message(call, "tool_inactive")
            chunk = ToolNotExecuted(
                tool_call_id=call.id, tool_name=call.name, reason="tool_inactive"
            )
            return _message(call, "not_executed", content), chunk
        if answer.authorization == "authorized":
            return None
        text = answer.reason or f"The user did not authorize {answer.strategy!r}."
        return _message(call, "error", text), ToolOutputError(tool_call_id=call.id, error_text=text)

    def _approval(
        self, call: ToolCall, answer: Answer | None
    ) -> tuple[dict[str, Any], Chunk] | None:
        """The tool message and chunk of a call that needed approval; ``None``: run it."""
        if answer is None or not answer.is_approval:
            return _cancelled(call, "approval")
        if call.name in self._inactive:
            content = not_executed_message(call, "tool_inactive")
            chunk = ToolNotExecuted(
                tool_call_id=call.id, tool_name=call.name, reason="tool_inactive"
            )
            return _message(call, "not_executed", content), chunk
        if answer.approved:
            return None
        reason = answer.reason
        content = json.dumps({"status": "denied", "reason": reason or "The user denied this call."})
        return _message(call, "denied", content), ToolOutputDenied(
            tool_call_id=call.id, reason=reason
        )

    def _client(self, call: ToolCall, answer: Answer | None) -> tuple[dict[str, Any], Chunk]:
        """The tool message and chunk of a client tool call; a late answer becomes a row."""
        deadline = self._deadline
        if answer is not None and (deadline is None or answer.at <= deadline):
            content = dump_output(answer.output)
            return _message(call, "output", content), ToolOutputAvailable(
                tool_call_id=call.id, output=answer.output
            )
        if answer is None and (deadline is None or time.time() <= deadline):
            return _cancelled(call, "answer")
        content = json.dumps({"status": "timeout", "message": "The client did not answer in time."})
        if answer is not None:
            self._rows.append(late_answer_row(call.name, call.id, answer.output))
        return _message(call, "error", content), ToolOutputError(
            tool_call_id=call.id, error_text=content
        )
