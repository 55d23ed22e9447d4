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
from .context import LogFold, apply_tools_item
from .errors import StateError
from .loop import ToolCall
from .loop._tools import ToolRun, not_executed_message, run_tool_calls
from .store import LogRecord, Store
from .telemetry import Recorder
from .tools import Tool, dump_output

__all__ = [
    "WaitingCall",
    "approval_id_for",
    "late_answer_item",
    "settle_waiting_calls",
    "waiting_calls",
]


def approval_id_for(tool_call_id: str) -> str:
    return f"approval-{tool_call_id}"


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
                try:
                    parsed = json.loads(arguments)
                except ValueError:
                    parsed = arguments
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


async def settle_waiting_calls(
    *,
    store: Store,
    session_id: str,
    waiting: Sequence[WaitingCall],
    meta: Mapping[str, Any],
    tools: Mapping[str, Tool],
    contexts: Mapping[str, Any],
    make_context: Any,
    recorder: Recorder,
    has_new_input: bool,
    client_tool_timeout: float | None,
    bind: Any = None,
) -> AsyncGenerator[Chunk, None]:
    """Settle ``waiting`` calls (see the module docstring); append their tool messages."""
    approvals: Mapping[str, Any] = meta.get("approvals", {})
    answers: Mapping[str, Any] = meta.get("tool_results", {})
    paused_at = float(meta.get("paused_at") or time.time())
    # The switch-offs in force now: the log's rows plus the ones still queued.
    fold = LogFold(session_id)
    fold.add(await store.read_log(session_id))
    inactive = set(fold.inactive)
    for entry in await store.pending_context(session_id):
        for item in entry.items:
            if item.get("kind") == "tools":
                apply_tools_item(inactive, {**item, "source": item.get("source", entry.source)})

    messages: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    to_run: list[ToolCall] = []
    for waiting_call in waiting:
        call = waiting_call.call
        tool = tools.get(call.name)
        yield ToolInputAvailable(tool_call_id=call.id, tool_name=call.name, input=call.input)
        if tool is not None and tool.needs_approval and tool.execute is not None:
            answer = approvals.get(call.id)
            if answer is None:
                if not has_new_input:
                    raise StateError(
                        f"call {call.id!r} ({call.name}) is still waiting for its approval"
                    )
                content = json.dumps(
                    {"status": "cancelled", "message": "No approval came before the next message."}
                )
                messages.append(_result_message(call, "error", content))
                yield ToolOutputError(tool_call_id=call.id, error_text=content)
            elif call.name in inactive:
                messages.append(
                    _result_message(
                        call, "not_executed", not_executed_message(call, "tool_inactive")
                    )
                )
                yield ToolNotExecuted(
                    tool_call_id=call.id, tool_name=call.name, reason="tool_inactive"
                )
            elif answer.get("approved"):
                to_run.append(call)
            else:
                reason = answer.get("reason")
                content = json.dumps(
                    {"status": "denied", "reason": reason or "The user denied this call."}
                )
                messages.append(_result_message(call, "denied", content))
                yield ToolOutputDenied(tool_call_id=call.id, reason=reason)
            continue
        answer = answers.get(call.id)
        deadline = paused_at + client_tool_timeout if client_tool_timeout is not None else None
        if answer is not None and (deadline is None or answer["at"] <= deadline):
            messages.append(_result_message(call, "output", dump_output(answer["output"])))
            yield ToolOutputAvailable(tool_call_id=call.id, output=answer["output"])
        elif (deadline is not None and time.time() > deadline) or answer is not None:
            content = json.dumps(
                {"status": "timeout", "message": "The client did not answer in time."}
            )
            messages.append(_result_message(call, "error", content))
            yield ToolOutputError(tool_call_id=call.id, error_text=content)
            if answer is not None:
                late.append(late_answer_item(call.name, call.id, answer["output"]))
        elif has_new_input:
            content = json.dumps(
                {"status": "cancelled", "message": "No answer came before the next message."}
            )
            messages.append(_result_message(call, "error", content))
            yield ToolOutputError(tool_call_id=call.id, error_text=content)
        else:
            raise StateError(
                f"call {call.id!r} ({call.name}) is still waiting for the client's answer"
            )

    if to_run:
        run = ToolRun(results=[], messages=[])
        async for chunk in run_tool_calls(
            to_run,
            tools=tools,
            contexts=contexts,
            gate=None,
            make_context=make_context,
            recorder=recorder,
            run=run,
            approved=frozenset(c.id for c in to_run),
            bind=bind,
        ):
            yield chunk
        statuses = {r.tool_call_id: r.status for r in run.results}
        messages.extend({**m, "_status": statuses[m["tool_call_id"]]} for m in run.messages)
    order = {w.call.id: i for i, w in enumerate(waiting)}
    messages.sort(key=lambda m: order[m["tool_call_id"]])
    await store.append_messages(session_id, messages)
    if late:
        await store.enqueue_context(
            session_id, late, source="late-answer", origin={"type": "late-answer"}
        )
    await store.update_session_meta(
        session_id, {"approvals": None, "tool_results": None, "paused_at": None}
    )


def late_answer_item(tool_name: str, call_id: str, output: Any) -> dict[str, Any]:
    """The notice a late client answer becomes."""
    return {
        "kind": "notice",
        "content": (
            f"A late answer arrived from the client tool {tool_name!r} (call {call_id}): "
            f"{dump_output(output)}"
        ),
        "source": "late-answer",
    }
