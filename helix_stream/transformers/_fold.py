"""Folding AI SDK UI message chunks into a ``UIMessage``.

This module owns :class:`UIMessageFold` and :func:`read_ui_message`: the Python twin of the
AI SDK's ``processUIMessageStream`` / ``readUIMessageStream`` (``ai`` v5-v7). It is what
:func:`~helix_stream.transformers.to_ui_message_stream` uses to hand ``on_finish`` the final
assistant message, and what a server uses to store the message a client will see.

The parts it builds have the same keys as the client's (keys the client leaves ``undefined``
are omitted, as ``JSON.stringify`` omits them): ``text`` and ``reasoning`` parts with a
``state`` of ``streaming``/``done``, ``tool-<name>`` parts (``dynamic-tool`` when the chunk
says ``dynamic``) with the tool states, ``data-<name>`` parts (replaced by ``id``, never stored
when ``transient``), ``source-url``/``source-document``/``file`` parts and ``step-start``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

__all__ = ["UIMessageFold", "read_ui_message"]

UIPart = dict[str, Any]
UIMessage = dict[str, Any]

# The keys a tool part update rewrites (the client assigns them, undefined or not).
_TOOL_VOLATILE = ("input", "output", "errorText", "rawInput", "preliminary")


def _merge(base: Any, override: Any) -> Any:
    """Deep-merge metadata the way the AI SDK's ``mergeObjects`` does."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            if value is None:
                continue
            merged[key] = _merge(merged.get(key), value) if key in merged else value
        return merged
    return override


class UIMessageFold:
    """Incrementally folds UI message chunk dicts into one assistant ``UIMessage``.

    Args:
        message: The message to continue (the last assistant message of a conversation, as
            the client does for a continuation); it is deep-copied. Anything else starts a new
            assistant message.
        message_id: The id of a new message until a ``start`` chunk sets one.

    Raises:
        ValueError: From :meth:`add`, for a chunk the client would reject (a text delta
            without its ``text-start``, a tool result for an unknown tool call, ...).

    Example::

        fold = UIMessageFold()
        async for chunk in to_ui_message_stream(result):
            fold.add(chunk)
        message = fold.message          # the UIMessage useChat would hold
    """

    def __init__(self, message: Mapping[str, Any] | None = None, message_id: str = "") -> None:
        if message is not None and message.get("role") == "assistant":
            self._message: UIMessage = copy.deepcopy(dict(message))
            self._message.setdefault("parts", [])
        else:
            self._message = {"id": message_id, "role": "assistant", "parts": []}
        self.finish_reason: str | None = None
        self._text: dict[str, UIPart] = {}
        self._reasoning: dict[str, UIPart] = {}
        # Deltas are buffered and applied on the next other chunk or read of `message`: a
        # `+=` per delta on a str held in a dict copies it each time (quadratic).
        self._pending: dict[int, tuple[UIPart, list[str]]] = {}
        # toolCallId -> accumulated input text and the tool's name (for tool-input-delta).
        self._partial: dict[str, tuple[list[str], str, bool]] = {}
        self._dirty_tools: dict[str, None] = {}
        for part in self._step_parts():
            if _is_tool(part) and part.get("state") == "input-streaming":
                self._partial[part["toolCallId"]] = (
                    [part.get("rawInput") or ""],
                    _tool_name(part),
                    part["type"] == "dynamic-tool",
                )

    @property
    def message(self) -> UIMessage:
        """The message as folded so far (the same dict object throughout)."""
        self._flush()
        return self._message

    # -- helpers -----------------------------------------------------------------------------

    def _flush(self) -> None:
        if self._pending:
            for part, pieces in self._pending.values():
                part["text"] += "".join(pieces)
            self._pending.clear()
        if self._dirty_tools:
            for tool_call_id in self._dirty_tools:
                texts, name, dynamic = self._partial[tool_call_id]
                raw = "".join(texts)
                values = {"input": _parse_partial_json(raw), "rawInput": raw}
                chunk = {"toolCallId": tool_call_id, "toolName": name}
                self._update_tool(chunk, "input-streaming", values, dynamic)
            self._dirty_tools.clear()

    def _step_parts(self) -> list[UIPart]:
        parts: list[UIPart] = self._message["parts"]
        index = len(parts) - 1
        while index >= 0 and parts[index].get("type") != "step-start":
            index -= 1
        return parts[index + 1 :]

    def _find_tool(self, tool_call_id: str) -> UIPart | None:
        for part in self._step_parts():
            if _is_tool(part) and part.get("toolCallId") == tool_call_id:
                return part
        parts: list[UIPart] = self._message["parts"]
        for part in reversed(parts):
            if _is_tool(part) and part.get("toolCallId") == tool_call_id:
                return part
        return None

    def _require_tool(self, chunk: Mapping[str, Any]) -> UIPart:
        part = self._find_tool(chunk["toolCallId"])
        if part is None:
            raise ValueError(f'No tool invocation found for tool call ID "{chunk["toolCallId"]}".')
        return part

    def _update_tool(
        self, chunk: Mapping[str, Any], state: str, values: Mapping[str, Any], dynamic: bool
    ) -> None:
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

    def _set_metadata(self, metadata: Any) -> None:
        if metadata is None:
            return
        current = self._message.get("metadata")
        self._message["metadata"] = metadata if current is None else _merge(current, metadata)

    # -- the fold ----------------------------------------------------------------------------

    def add(self, chunk: Mapping[str, Any]) -> None:
        """Apply one UI chunk dict to :attr:`message`."""
        kind = chunk["type"]
        if kind == "text-delta" or kind == "reasoning-delta":
            self._delta(chunk, self._text if kind == "text-delta" else self._reasoning)
            return
        if kind == "tool-input-delta":
            self._tool_input_delta(chunk)
            return
        self._flush()
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(self, chunk)
        elif kind.startswith("data-"):
            self._data(chunk)
        # "error", "abort" and the rest leave the message as it is (the client reports errors
        # through its onError callback).

    def _delta(self, chunk: Mapping[str, Any], active: dict[str, UIPart]) -> None:
        part = active.get(chunk["id"])
        if part is None:
            raise ValueError(f'Received {chunk["type"]} for missing part with ID "{chunk["id"]}".')
        pending = self._pending.get(id(part))
        if pending is None:
            self._pending[id(part)] = (part, [chunk["delta"]])
        else:
            pending[1].append(chunk["delta"])
        if chunk.get("providerMetadata") is not None:
            part["providerMetadata"] = chunk["providerMetadata"]

    def _tool_input_delta(self, chunk: Mapping[str, Any]) -> None:
        partial = self._partial.get(chunk["toolCallId"])
        if partial is None:
            raise ValueError(
                f'Received tool-input-delta for missing tool call "{chunk["toolCallId"]}".'
            )
        partial[0].append(chunk["inputTextDelta"])
        self._dirty_tools[chunk["toolCallId"]] = None

    def _part_start(self, chunk: Mapping[str, Any]) -> None:
        if chunk["type"] == "text-start":
            part: UIPart = {"type": "text", "text": "", "state": "streaming"}
            active = self._text
        else:
            part = {"type": "reasoning", "id": chunk["id"], "text": "", "state": "streaming"}
            active = self._reasoning
        if chunk.get("providerMetadata") is not None:
            part["providerMetadata"] = chunk["providerMetadata"]
        active[chunk["id"]] = part
        self._message["parts"].append(part)

    def _part_end(self, chunk: Mapping[str, Any]) -> None:
        active = self._text if chunk["type"] == "text-end" else self._reasoning
        part = active.pop(chunk["id"], None)
        if part is None:
            raise ValueError(f'Received {chunk["type"]} for missing part with ID "{chunk["id"]}".')
        part["state"] = "done"
        if chunk.get("providerMetadata") is not None:
            part["providerMetadata"] = chunk["providerMetadata"]

    def _tool_input_start(self, chunk: Mapping[str, Any]) -> None:
        dynamic = bool(chunk.get("dynamic"))
        self._partial[chunk["toolCallId"]] = ([], chunk["toolName"], dynamic)
        self._update_tool(chunk, "input-streaming", {}, dynamic)

    def _tool_input_available(self, chunk: Mapping[str, Any]) -> None:
        self._partial.pop(chunk["toolCallId"], None)
        values = {"input": chunk.get("input")}
        self._update_tool(chunk, "input-available", values, bool(chunk.get("dynamic")))

    def _tool_input_error(self, chunk: Mapping[str, Any]) -> None:
        self._partial.pop(chunk["toolCallId"], None)
        values = {"rawInput": chunk.get("input"), "errorText": chunk["errorText"]}
        self._update_tool(chunk, "output-error", values, bool(chunk.get("dynamic")))

    def _tool_output_available(self, chunk: Mapping[str, Any]) -> None:
        part = self._require_tool(chunk)
        self._finish_tool(part, "output-available", {"output": chunk.get("output")})
        if chunk.get("preliminary") is not None:
            part["preliminary"] = chunk["preliminary"]

    def _tool_output_error(self, chunk: Mapping[str, Any]) -> None:
        self._finish_tool(
            self._require_tool(chunk), "output-error", {"errorText": chunk["errorText"]}
        )

    def _tool_output_denied(self, chunk: Mapping[str, Any]) -> None:
        self._require_tool(chunk)["state"] = "output-denied"

    def _approval_request(self, chunk: Mapping[str, Any]) -> None:
        part = self._require_tool(chunk)
        part["state"] = "approval-requested"
        part["approval"] = {"id": chunk["approvalId"]}

    def _start_step(self, chunk: Mapping[str, Any]) -> None:
        self._message["parts"].append({"type": "step-start"})

    def _finish_step(self, chunk: Mapping[str, Any]) -> None:
        self._text = {}
        self._reasoning = {}

    def _start(self, chunk: Mapping[str, Any]) -> None:
        if chunk.get("messageId") is not None:
            self._message["id"] = chunk["messageId"]
        self._set_metadata(chunk.get("messageMetadata"))

    def _finish(self, chunk: Mapping[str, Any]) -> None:
        if chunk.get("finishReason") is not None:
            self.finish_reason = chunk["finishReason"]
        self._set_metadata(chunk.get("messageMetadata"))

    def _metadata(self, chunk: Mapping[str, Any]) -> None:
        self._set_metadata(chunk.get("messageMetadata"))

    def _source(self, chunk: Mapping[str, Any]) -> None:
        self._message["parts"].append({k: v for k, v in chunk.items() if v is not None})

    def _data(self, chunk: Mapping[str, Any]) -> None:
        if chunk.get("transient"):
            return
        parts: list[UIPart] = self._message["parts"]
        data_id = chunk.get("id")
        if data_id is not None:
            for part in parts:
                if part.get("type") == chunk["type"] and part.get("id") == data_id:
                    part["data"] = chunk.get("data")
                    return
        parts.append(dict(chunk))  # the client stores the chunk itself as the part

    # The handler of each chunk type (deltas are handled before this table: the hot path).
    _handlers: ClassVar[dict[str, Callable[[UIMessageFold, Mapping[str, Any]], None]]] = {
        "text-start": _part_start,
        "reasoning-start": _part_start,
        "text-end": _part_end,
        "reasoning-end": _part_end,
        "tool-input-start": _tool_input_start,
        "tool-input-available": _tool_input_available,
        "tool-input-error": _tool_input_error,
        "tool-output-available": _tool_output_available,
        "tool-output-error": _tool_output_error,
        "tool-output-denied": _tool_output_denied,
        "tool-approval-request": _approval_request,
        "start-step": _start_step,
        "finish-step": _finish_step,
        "start": _start,
        "finish": _finish,
        "message-metadata": _metadata,
        "source-url": _source,
        "steering-message": _source,  # the client stores it as a part, as it came
        "source-document": _source,
        "file": _source,
    }

    @staticmethod
    def _finish_tool(part: UIPart, state: str, values: Mapping[str, Any]) -> None:
        part["state"] = state
        for key in ("output", "errorText", "preliminary"):
            part.pop(key, None)
        part.update(values)


def read_ui_message(
    chunks: Iterable[Mapping[str, Any]], *, message: Mapping[str, Any] | None = None
) -> UIMessage:
    """Fold UI message chunk dicts into the final ``UIMessage``, as the AI SDK client does.

    Args:
        chunks: UI chunk dicts, e.g. collected from
            :func:`~helix_stream.transformers.to_ui_message_stream`.
        message: The last assistant message when the stream continues it.

    Returns:
        ``{"id", "role": "assistant", "parts": [...]}`` plus ``metadata`` when any was sent.

    Raises:
        ValueError: A chunk the client would reject (see :class:`UIMessageFold`).

    Example:
        >>> message = read_ui_message([{"type": "start", "messageId": "m1"},
        ...                            {"type": "text-start", "id": "t"},
        ...                            {"type": "text-delta", "id": "t", "delta": "Hi"},
        ...                            {"type": "text-end", "id": "t"}])
        >>> message["id"], message["parts"]
        ('m1', [{'type': 'text', 'text': 'Hi', 'state': 'done'}])
    """
    fold = UIMessageFold(message)
    add = fold.add
    for chunk in chunks:
        add(chunk)
    return fold.message


def _reset_step(fold: UIMessageFold, chunk: Mapping[str, Any]) -> None:
    """ai@7's ``reset-step``: the parts the step added since its step-start go, with their
    open ids (a step redone by ``stream_retries``; ``add`` flushed the deltas first)."""
    parts: list[UIPart] = fold._message["parts"]
    del parts[len(parts) - len(fold._step_parts()) :]
    fold._text, fold._reasoning, fold._partial = {}, {}, {}


UIMessageFold._handlers["reset-step"] = _reset_step


def _is_tool(part: Mapping[str, Any]) -> bool:
    kind = part.get("type", "")
    return isinstance(kind, str) and (kind.startswith("tool-") or kind == "dynamic-tool")


def _tool_name(part: Mapping[str, Any]) -> str:
    if part.get("type") == "dynamic-tool":
        return str(part.get("toolName", ""))
    return str(part["type"]).removeprefix("tool-")


def _parse_partial_json(text: str) -> Any:
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
