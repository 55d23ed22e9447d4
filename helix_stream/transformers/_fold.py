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
:meth:`UIMessageFold.add` dispatches on the chunk type; the tool parts are kept by
:class:`~helix_stream.transformers._tool_parts.ToolPartFold`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from helix_stream.transformers._tool_parts import TOOL_CHUNKS, ToolPartFold, step_start

__all__ = ["UIMessageFold", "read_ui_message"]

UIPart = dict[str, Any]
UIMessage = dict[str, Any]


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
        self._tools = ToolPartFold(self._message)

    @property
    def message(self) -> UIMessage:
        """The message as folded so far (the same dict object throughout)."""
        self._flush()
        return self._message

    def _flush(self) -> None:
        if self._pending:
            for part, pieces in self._pending.values():
                part["text"] += "".join(pieces)
            self._pending.clear()
        self._tools.flush()

    # -- the fold: a dispatcher over chunk types ---------------------------------------------

    def add(self, chunk: Mapping[str, Any]) -> None:
        """Apply one UI chunk dict to :attr:`message`."""
        kind = chunk["type"]
        # Deltas first, unflushed: the hot path.
        if kind == "text-delta" or kind == "reasoning-delta":
            self._delta(chunk, self._text if kind == "text-delta" else self._reasoning)
            return
        if kind == "tool-input-delta":
            self._tools.input_delta(chunk)
            return
        self._flush()
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(self, chunk)
        elif kind in TOOL_CHUNKS:
            self._tools.add(chunk)
        elif kind.startswith("data-"):
            self._data(chunk)
        # "error", "abort" and the rest leave the message as it is (the client reports errors
        # through its onError callback).

    # -- text and reasoning parts ------------------------------------------------------------

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

    # -- steps and message metadata ----------------------------------------------------------

    def _start_step(self, chunk: Mapping[str, Any]) -> None:
        self._message["parts"].append({"type": "step-start"})

    def _finish_step(self, chunk: Mapping[str, Any]) -> None:
        self._text = {}
        self._reasoning = {}

    def _reset_step(self, chunk: Mapping[str, Any]) -> None:
        """ai@7's ``reset-step``: the parts the step added since its step-start go, with their
        open ids (a step redone by ``stream_retries``; ``add`` flushed the deltas first)."""
        parts: list[UIPart] = self._message["parts"]
        del parts[step_start(parts) :]
        self._text, self._reasoning = {}, {}
        self._tools.reset_step()

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

    def _set_metadata(self, metadata: Any) -> None:
        if metadata is None:
            return
        current = self._message.get("metadata")
        self._message["metadata"] = metadata if current is None else _merge(current, metadata)

    # -- source, file and data parts ---------------------------------------------------------

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

    # The handler of each chunk type (deltas are handled before this table: the hot path; the
    # tool chunks go to `_tools`, the ToolPartFold that owns the tool parts).
    _handlers: ClassVar[dict[str, Callable[[UIMessageFold, Mapping[str, Any]], None]]] = {
        "text-start": _part_start,
        "reasoning-start": _part_start,
        "text-end": _part_end,
        "reasoning-end": _part_end,
        "start-step": _start_step,
        "finish-step": _finish_step,
        "reset-step": _reset_step,
        "start": _start,
        "finish": _finish,
        "message-metadata": _metadata,
        "source-url": _source,
        "steering-message": _source,  # the client stores it as a part, as it came
        "source-document": _source,
        "file": _source,
    }


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
