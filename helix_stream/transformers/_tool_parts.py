"""Folding tool chunks into the tool parts of a ``UIMessage``.

This module owns :class:`ToolPartFold`: what the AI SDK client does with the ``tool-*`` UI
chunks (streamed input, input available or invalid, output, output errors, denials and
approval requests) to the ``tool-<name>`` / ``dynamic-tool`` parts of the message it folds,
and :func:`parse_partial_json`, its reading of incomplete tool input. Which chunk goes where
is decided by :class:`~helix_stream.transformers._fold.UIMessageFold`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from itertools import chain
from typing import Any, ClassVar

__all__ = ["TOOL_CHUNKS", "ToolPartFold", "parse_partial_json", "step_start"]

_Part = dict[str, Any]

# The keys a tool part update rewrites (the client assigns them, undefined or not).
_TOOL_VOLATILE = ("input", "output", "errorText", "rawInput", "preliminary")


class ToolPartFold:
    """The tool parts of one assistant message being folded.

    Args:
        message: The message dict the parts live in (``message["parts"]``); the tool parts are
            updated in it, as the client updates its message.

    Raises:
        ValueError: From :meth:`add` and :meth:`input_delta`, for a chunk the client would
            reject (an input delta without its ``tool-input-start``, an output for an unknown
            tool call, ...).
    """

    def __init__(self, message: dict[str, Any]) -> None:
        self._message = message
        # toolCallId -> accumulated input text, the tool's name and whether it is dynamic.
        self._partial: dict[str, tuple[list[str], str, bool]] = {}
        # Input deltas are parsed on the next flush, not per delta (parsing is not cheap).
        self._dirty: dict[str, None] = {}
        for part in self._step_parts():
            if _is_tool(part) and part.get("state") == "input-streaming":
                self._partial[part["toolCallId"]] = (
                    [part.get("rawInput") or ""],
                    _tool_name(part),
                    part["type"] == "dynamic-tool",
                )

    def add(self, chunk: Mapping[str, Any]) -> None:
        """Apply one tool chunk (a type in :data:`TOOL_CHUNKS`) other than an input delta."""
        self._handlers[chunk["type"]](self, chunk)

    def input_delta(self, chunk: Mapping[str, Any]) -> None:
        """Buffer a ``tool-input-delta``; :meth:`flush` shows it in the part."""
        partial = self._partial.get(chunk["toolCallId"])
        if partial is None:
            raise ValueError(
                f'Received tool-input-delta for missing tool call "{chunk["toolCallId"]}".'
            )
        partial[0].append(chunk["inputTextDelta"])
        self._dirty[chunk["toolCallId"]] = None

    def flush(self) -> None:
        """Show the buffered input deltas as the parts' partial ``input`` and ``rawInput``."""
        if not self._dirty:
            return
        for tool_call_id in self._dirty:
            texts, name, dynamic = self._partial[tool_call_id]
            raw = "".join(texts)
            values = {"input": parse_partial_json(raw), "rawInput": raw}
            chunk = {"toolCallId": tool_call_id, "toolName": name}
            self._update(chunk, "input-streaming", values, dynamic)
        self._dirty.clear()

    # -- finding and updating parts ------------------------------------------------------------

    def reset_step(self) -> None:
        """Forget the current step's streaming inputs (its parts are dropped by the fold)."""
        self._partial = {}
        self._dirty = {}

    def _step_parts(self) -> list[_Part]:
        parts: list[_Part] = self._message["parts"]
        return parts[step_start(parts) :]

    def _require(self, chunk: Mapping[str, Any]) -> _Part:
        """The part of the chunk's tool call: the current step's, else the latest earlier one."""
        tool_call_id = chunk["toolCallId"]
        parts: list[_Part] = self._message["parts"]
        for part in chain(self._step_parts(), reversed(parts)):
            if _is_tool(part) and part.get("toolCallId") == tool_call_id:
                return part
        raise ValueError(f'No tool invocation found for tool call ID "{tool_call_id}".')

    def _update(
        self, chunk: Mapping[str, Any], state: str, values: Mapping[str, Any], dynamic: bool
    ) -> None:
        """Set the input side of a part of the current step, adding the part if it is new."""
        tool_call_id = chunk["toolCallId"]
        part = next(
            (p for p in self._step_parts() if _is_tool(p) and p.get("toolCallId") == tool_call_id),
            None,
        )
        if part is None:
            part = {"type": "", "toolCallId": tool_call_id}
            self._message["parts"].append(part)
        dynamic = part["type"] == "dynamic-tool" if part["type"] else dynamic
        if dynamic:
            part["type"] = "dynamic-tool"
            part["toolName"] = chunk["toolName"]
        else:
            part["type"] = f"tool-{chunk['toolName']}"
        part["state"] = state
        for key in _TOOL_VOLATILE:
            part.pop(key, None)
        part.update((k, v) for k, v in values.items() if v is not None or k == "output")
        for key in ("title", "providerExecuted"):
            if chunk.get(key) is not None:
                part[key] = chunk[key]

    @staticmethod
    def _finish(part: _Part, state: str, values: Mapping[str, Any]) -> None:
        """Set the output side of a part."""
        part["state"] = state
        for key in ("output", "errorText", "preliminary"):
            part.pop(key, None)
        part.update(values)

    # -- one handler per chunk type --------------------------------------------------------------

    def _input_start(self, chunk: Mapping[str, Any]) -> None:
        dynamic = bool(chunk.get("dynamic"))
        self._partial[chunk["toolCallId"]] = ([], chunk["toolName"], dynamic)
        self._update(chunk, "input-streaming", {}, dynamic)

    def _input_available(self, chunk: Mapping[str, Any]) -> None:
        self._partial.pop(chunk["toolCallId"], None)
        values = {"input": chunk.get("input")}
        self._update(chunk, "input-available", values, bool(chunk.get("dynamic")))

    def _input_error(self, chunk: Mapping[str, Any]) -> None:
        self._partial.pop(chunk["toolCallId"], None)
        values = {"rawInput": chunk.get("input"), "errorText": chunk["errorText"]}
        self._update(chunk, "output-error", values, bool(chunk.get("dynamic")))

    def _output_available(self, chunk: Mapping[str, Any]) -> None:
        part = self._require(chunk)
        self._finish(part, "output-available", {"output": chunk.get("output")})
        if chunk.get("preliminary") is not None:
            part["preliminary"] = chunk["preliminary"]

    def _output_error(self, chunk: Mapping[str, Any]) -> None:
        self._finish(self._require(chunk), "output-error", {"errorText": chunk["errorText"]})

    def _output_denied(self, chunk: Mapping[str, Any]) -> None:
        self._require(chunk)["state"] = "output-denied"

    def _approval_request(self, chunk: Mapping[str, Any]) -> None:
        part = self._require(chunk)
        part["state"] = "approval-requested"
        part["approval"] = {"id": chunk["approvalId"]}

    _handlers: ClassVar[dict[str, Callable[[ToolPartFold, Mapping[str, Any]], None]]] = {
        "tool-input-start": _input_start,
        "tool-input-available": _input_available,
        "tool-input-error": _input_error,
        "tool-output-available": _output_available,
        "tool-output-error": _output_error,
        "tool-output-denied": _output_denied,
        "tool-approval-request": _approval_request,
    }


# The chunk types :meth:`ToolPartFold.add` takes (``tool-input-delta`` goes to ``input_delta``).
TOOL_CHUNKS = frozenset(ToolPartFold._handlers)


def step_start(parts: list[dict[str, Any]]) -> int:
    """The index of the current step's first part (after the last ``step-start``)."""
    index = len(parts) - 1
    while index >= 0 and parts[index].get("type") != "step-start":
        index -= 1
    return index + 1


def _is_tool(part: Mapping[str, Any]) -> bool:
    kind = part.get("type", "")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def _tool_name(part: Mapping[str, Any]) -> str:
    if part.get("type") == "dynamic-tool":
        return str(part.get("toolName", ""))
    return str(part["type"]).removeprefix("tool-")


def parse_partial_json(text: str) -> Any:
    """Best-effort parse of incomplete JSON (what the client's ``parsePartialJson`` shows).

    Cuts the text after the last complete value and closes the open strings, arrays and
    objects; ``None`` when nothing parses.
    """
    try:
        return json.loads(text)
    except ValueError:
        pass
    stack: list[list[Any]] = []  # ["}", expecting_key] or ["]", False]
    best = ""  # the longest repaired prefix found so far
    in_string = escaped = is_key = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if not is_key:
                    best = text[: index + 1] + _closers(stack)
            continue
        if char == '"':
            in_string = True
            is_key = bool(stack) and stack[-1][1]
        elif char in "{[":
            stack.append(["}" if char == "{" else "]", char == "{"])
            best = text[: index + 1] + _closers(stack)
        elif char in "}]":
            if stack:
                stack.pop()
            best = text[: index + 1] + _closers(stack)
        elif char == ":" and stack:
            stack[-1][1] = False
        elif char == "," and stack and stack[-1][0] == "}":
            stack[-1][1] = True
        elif char.isdigit() or text.endswith(("true", "false", "null"), 0, index + 1):
            best = text[: index + 1] + _closers(stack)
    if in_string and not is_key:
        best = text + '"' + _closers(stack)
    try:
        return json.loads(best) if best else None
    except ValueError:
        return None


def _closers(stack: list[list[Any]]) -> str:
    return "".join(entry[0] for entry in reversed(stack))
