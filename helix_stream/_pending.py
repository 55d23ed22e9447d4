"""Tool calls a paused turn left waiting: approvals and client tools.

A turn pauses when a call needs the app's approval or a client's answer. The answers are
recorded on the session (``respond_to_approval``, ``submit_tool_result``); the next run first
settles every waiting call, then calls the model:

* approved → the tool runs — unless it was switched off meanwhile, by a row *or by a switch-off
  still in the queue*: then nothing runs and the call gets ``tool_inactive`` (the approval
  answers "may this call run", not "override the switch"; reference 000);
* denied → a denied result;
* a client answer → its output; one that came after ``client_tool_timeout`` → the call gets a
  timeout result and the answer is delivered as a ``notice`` row with source ``late-answer``;
* no answer but a new user message → a cancelled result (the conversation must stay valid).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from .chunks import (
    Chunk,
    ToolInputAvailable,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
)
from .context import LogFold, apply_tools_item, validate_items
from .errors import StateError
from .loop import ToolCall
from .loop._tools import ToolRun, not_executed_message, run_tool_calls
from .models._parse import parse_arguments
from .store import LogRecord, Store
from .telemetry import Recorder
from .tools import Tool, dump_output

__all__ = [
    "WaitingCall",
    "answer_key",
    "approval_id_for",
    "approval_key",
    "check_answerable",
    "late_answer_item",
    "settle_waiting_calls",
    "waiting_calls",
]


def approval_id_for(tool_call_id: str) -> str:
    """The approval id of a call (what ``tool-approval-request`` announces)."""
    return f"approval-{tool_call_id}"


# Answers live in the session's meta under one key per call, so that two answers arriving at
# once never overwrite each other (the meta merge is per key), and settling a call clears only
# its own keys.
def approval_key(tool_call_id: str) -> str:
    return f"approval:{tool_call_id}"


def answer_key(tool_call_id: str) -> str:
    return f"answer:{tool_call_id}"


@dataclass(frozen=True, slots=True)
class WaitingCall:
    call: ToolCall
    message_id: str | None


def waiting_calls(log: Sequence[LogRecord]) -> list[WaitingCall]:
    """The calls of the last assistant message that have no tool message yet."""
    answered = {r.payload.get("tool_call_id") for r in log if r.role == "tool"}
    for record in reversed(log):
        if record.role == "assistant" and record.payload.get("tool_calls"):
            out = []
            for raw in record.payload["tool_calls"]:
                if raw["id"] in answered:
                    continue
                arguments = raw["function"]["arguments"]
                parsed = parse_arguments(arguments)
                call = ToolCall(
                    id=raw["id"], name=raw["function"]["name"], input=parsed, arguments=arguments
                )
                out.append(WaitingCall(call, record.payload.get("_message_id")))
            return out
        if record.role == "user":
            return []
    return []


def _result_message(call: ToolCall, status: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "content": content, "_status": status}


def _deadline(meta: Mapping[str, Any], client_tool_timeout: float | None) -> float | None:
    if client_tool_timeout is None:
        return None
    return float(meta.get("paused_at") or time.time()) + client_tool_timeout


def check_answerable(
    waiting: Sequence[WaitingCall],
    meta: Mapping[str, Any],
    tools: Mapping[str, Tool],
    *,
    has_new_input: bool,
    client_tool_timeout: float | None,
) -> None:
    """Refuse (before anything is written) a turn that could not settle its waiting calls.

    Raises:
        StateError: a call still waits for its approval or its client's answer, and there is
            no new user message to move on with.
    """
    if has_new_input:
        return
    deadline = _deadline(meta, client_tool_timeout)
    for waiting_call in waiting:
        call = waiting_call.call
        tool = tools.get(call.name)
        if tool is not None and tool.needs_approval and tool.execute is not None:
            if approval_key(call.id) not in meta:
                raise StateError(
                    f"call {call.id!r} ({call.name}) is still waiting for its approval"
                )
        elif answer_key(call.id) not in meta and (deadline is None or time.time() <= deadline):
            raise StateError(
                f"call {call.id!r} ({call.name}) is still waiting for the client's answer"
            )


def _cancelled(call: ToolCall, what: str) -> tuple[dict[str, Any], Chunk]:
    content = json.dumps(
        {"status": "cancelled", "message": f"No {what} came before the next message."}
    )
    return _result_message(call, "error", content), ToolOutputError(
        tool_call_id=call.id, error_text=content
    )


def _settle_approval(
    call: ToolCall, answer: Mapping[str, Any] | None, inactive: set[str]
) -> tuple[dict[str, Any] | None, Chunk | None]:
    """(tool message, chunk) for a call that needed approval; (None, None): run it."""
    if answer is None:
        return _cancelled(call, "approval")
    if call.name in inactive:
        content = not_executed_message(call, "tool_inactive")
        chunk = ToolNotExecuted(tool_call_id=call.id, tool_name=call.name, reason="tool_inactive")
        return _result_message(call, "not_executed", content), chunk
    if answer.get("approved"):
        return None, None
    reason = answer.get("reason")
    content = json.dumps({"status": "denied", "reason": reason or "The user denied this call."})
    return _result_message(call, "denied", content), ToolOutputDenied(
        tool_call_id=call.id, reason=reason
    )


def _settle_client_call(
    call: ToolCall,
    answer: Mapping[str, Any] | None,
    deadline: float | None,
    late: list[dict[str, Any]],
) -> tuple[dict[str, Any], Chunk]:
    """(tool message, chunk) for a client tool call; a late answer goes to ``late``."""
    if answer is not None and (deadline is None or answer["at"] <= deadline):
        content = dump_output(answer["output"])
        return _result_message(call, "output", content), ToolOutputAvailable(
            tool_call_id=call.id, output=answer["output"]
        )
    if answer is None and (deadline is None or time.time() <= deadline):
        return _cancelled(call, "answer")
    content = json.dumps({"status": "timeout", "message": "The client did not answer in time."})
    if answer is not None:
        late.append(late_answer_item(call.name, call.id, answer["output"]))
    return _result_message(call, "error", content), ToolOutputError(
        tool_call_id=call.id, error_text=content
    )


async def settle_waiting_calls(
    *,
    store: Store,
    session_id: str,
    log: Sequence[LogRecord],
    waiting: Sequence[WaitingCall],
    meta: Mapping[str, Any],
    tools: Mapping[str, Tool],
    contexts: Mapping[str, Any],
    make_context: Any,
    recorder: Recorder,
    client_tool_timeout: float | None,
    bind: Any = None,
) -> AsyncGenerator[Chunk, None]:
    """Settle ``waiting`` calls (see the module docstring); append their tool messages.

    Callers have checked :func:`check_answerable` first: a call without an answer here is
    settled as cancelled (a new user message moved the conversation on). ``log`` is the
    session's log as the caller read it (the running turn is its only writer).
    """
    # The switch-offs in force now: the log's rows plus the ones still queued.
    fold = LogFold(session_id)
    fold.add(log)
    inactive = set(fold.inactive)
    for entry in await store.pending_context(session_id):
        for item in entry.items:
            if item.get("kind") == "tools":
                apply_tools_item(inactive, {**item, "source": item.get("source", entry.source)})

    deadline = _deadline(meta, client_tool_timeout)
    messages: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    to_run: list[ToolCall] = []
    for waiting_call in waiting:
        call = waiting_call.call
        tool = tools.get(call.name)
        yield ToolInputAvailable(tool_call_id=call.id, tool_name=call.name, input=call.input)
        if tool is not None and tool.needs_approval and tool.execute is not None:
            message, chunk = _settle_approval(call, meta.get(approval_key(call.id)), inactive)
            if message is None:
                to_run.append(call)
                continue
        else:
            message, chunk = _settle_client_call(
                call, meta.get(answer_key(call.id)), deadline, late
            )
        messages.append(message)
        assert chunk is not None
        yield chunk

    if to_run:
        run = ToolRun(results=[], messages=[])
        tool_chunks = run_tool_calls(
            to_run,
            tools=tools,
            contexts=contexts,
            gate=None,
            make_context=make_context,
            recorder=recorder,
            run=run,
            approved=frozenset(c.id for c in to_run),
            bind=bind,
        )
        async with aclosing(tool_chunks):
            async for chunk in tool_chunks:
                yield chunk
        statuses = {r.tool_call_id: r.status for r in run.results}
        messages.extend({**m, "_status": statuses[m["tool_call_id"]]} for m in run.messages)
    order = {w.call.id: i for i, w in enumerate(waiting)}
    messages.sort(key=lambda m: order[m["tool_call_id"]])
    await store.append_messages(session_id, messages)
    if late:
        await store.enqueue_context(
            session_id,
            validate_items(late, forced_source="late-answer"),
            source="late-answer",
            origin={"type": "late-answer"},
        )
    cleared: dict[str, Any] = {"paused_at": None}
    for w in waiting:
        cleared[approval_key(w.call.id)] = None
        cleared[answer_key(w.call.id)] = None
    await store.update_session_meta(session_id, cleared)


def late_answer_item(tool_name: str, call_id: str, output: Any) -> dict[str, Any]:
    """The notice a late client answer becomes (capped: a row is at most 32 KiB)."""
    text = dump_output(output)
    if len(text.encode()) > 16_000:
        text = text.encode()[:16_000].decode(errors="ignore") + " …(truncated)"
    return {
        "kind": "notice",
        "content": f"A late answer arrived from the client tool {tool_name!r} ({call_id}): {text}",
        "source": "late-answer",
    }
