"""The session log as AI SDK ``UIMessage`` dicts (what ``useChat`` shows): no context rows.

One user record is one user message; the assistant and tool records of one turn fold into one
assistant message (``step-start``, ``text`` and ``tool-<name>`` parts), with the id that the
turn's stream announced in its ``start`` chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ._messages import message_text
from .chunks import not_executed_output
from .errors import ERROR_MASK, ToolFailedError
from .store import LogRecord

__all__ = ["log_to_ui_messages"]


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _error_text(text: str, on_error: Callable[[BaseException], str] | None) -> str:
    # The same rule as the live stream: masked unless on_error chooses the text.
    if on_error is None:
        return ERROR_MASK
    try:
        chosen = on_error(ToolFailedError(text))
    except Exception:
        return ERROR_MASK
    return chosen if isinstance(chosen, str) else ERROR_MASK


def log_to_ui_messages(
    records: Sequence[LogRecord], on_error: Callable[[BaseException], str] | None = None
) -> list[dict[str, Any]]:
    """Fold log records into UIMessages, skipping context rows."""
    out: list[dict[str, Any]] = []
    assistant: dict[str, Any] | None = None
    tool_parts: dict[str, dict[str, Any]] = {}
    for record in records:
        p = record.payload
        if record.role == "context":
            continue
        if record.role in ("user", "system"):
            assistant = None
            out.append(
                {
                    "id": p.get("_message_id") or f"log-{record.seq}",
                    "role": record.role,
                    "parts": [{"type": "text", "text": message_text(p)}],
                }
            )
        elif record.role == "assistant":
            message_id = p.get("_message_id") or f"log-{record.seq}"
            if assistant is None or assistant["id"] != message_id:
                assistant = {"id": message_id, "role": "assistant", "parts": []}
                out.append(assistant)
            assistant["parts"].append({"type": "step-start"})
            if p.get("content"):
                assistant["parts"].append(
                    {"type": "text", "text": message_text(p), "state": "done"}
                )
            for call in p.get("tool_calls") or []:
                name = call["function"]["name"]
                part = {
                    "type": f"tool-{name}",
                    "toolCallId": call["id"],
                    "state": "input-available",
                    "input": _json(call["function"]["arguments"]),
                }
                tool_parts[call["id"]] = part
                assistant["parts"].append(part)
        elif record.role == "tool":
            found = tool_parts.get(p.get("tool_call_id", ""))
            if found is None:
                continue
            part = found
            status = p.get("_status", "output")
            if status == "error":
                part.update(state="output-error", errorText=_error_text(message_text(p), on_error))
            elif status == "denied":
                part.update(state="output-denied")
            elif status == "not_executed":
                # The same output the live stream showed (see transformers), not the model's text.
                reason = _json(message_text(p)).get("reason", "tool_inactive")
                output = not_executed_output(part["type"].removeprefix("tool-"), reason)
                part.update(state="output-available", output=output)
            else:
                part.update(state="output-available", output=_json(message_text(p)))
    return out
