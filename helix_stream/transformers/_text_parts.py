"""The open text and reasoning parts of one UI stream, under the wire ids the client knows.

Owned here: :class:`OpenParts`, which maps text and reasoning chunks to their UI chunks and
repairs their order (a delta without its start opens the part first; an end of a part that is
not open is dropped), and gives each part a wire id the stream has not used yet: the AI SDK
client folds a reused id into the old part. The mapper's dispatch calls its handlers directly;
it closes the open parts when a step ends (:meth:`OpenParts.close`) and forgets them when a step
is redone (:meth:`OpenParts.reset`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helix_stream.chunks import (
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    TextDelta,
    TextEnd,
    TextStart,
)

__all__ = ["OpenParts"]


def _fresh_id(source_id: str, used: set[str]) -> str:
    wire, n = source_id, 1
    while wire in used:  # the AI SDK client folds a reused id into the old part
        wire, n = f"{source_id}-{n}", n + 1
    used.add(wire)
    return wire


class OpenParts:
    """The text and reasoning parts of one stream (see the module docstring).

    Example:
        >>> sent = []
        >>> parts = OpenParts(emit=sent.append)
        >>> parts.text_delta(TextDelta(id="t", delta="Hi"))
        >>> parts.close()
        >>> [c["type"] for c in sent]
        ['text-start', 'text-delta', 'text-end']
    """

    __slots__ = ("_emit", "_reasoning", "_text", "_used_reasoning", "_used_text")

    def __init__(self, *, emit: Callable[[dict[str, Any]], None]) -> None:
        self._emit = emit
        self._text: dict[str, str] = {}  # source id -> wire id of the open text parts
        self._reasoning: dict[str, str] = {}
        self._used_text: set[str] = set()
        self._used_reasoning: set[str] = set()

    def close(self) -> None:
        """End every open part (reasoning first)."""
        for wire in self._reasoning.values():
            self._emit({"type": "reasoning-end", "id": wire})
        for wire in self._text.values():
            self._emit({"type": "text-end", "id": wire})
        self._reasoning.clear()
        self._text.clear()

    def reset(self) -> None:
        """Forget the open parts without ending them (the client drops them on ``reset-step``)."""
        self._text.clear()
        self._reasoning.clear()

    def text_start(self, chunk: TextStart) -> None:
        """Open a text part (once per source id while it is open)."""
        if chunk.id not in self._text:
            wire = self._text[chunk.id] = _fresh_id(chunk.id, self._used_text)
            self._emit({"type": "text-start", "id": wire})

    def text_delta(self, chunk: TextDelta) -> None:
        """Send a text delta, opening its part first if need be."""
        wire = self._text.get(chunk.id)
        if wire is None:  # a delta without its start: open the part first
            self.text_start(TextStart(id=chunk.id))
            wire = self._text[chunk.id]
        self._emit({"type": "text-delta", "id": wire, "delta": chunk.delta})

    def text_end(self, chunk: TextEnd) -> None:
        """End an open text part."""
        wire = self._text.pop(chunk.id, None)
        if wire is not None:
            self._emit({"type": "text-end", "id": wire})

    def reasoning_start(self, chunk: ReasoningStart) -> None:
        """Open a reasoning part (once per source id while it is open)."""
        if chunk.id not in self._reasoning:
            wire = self._reasoning[chunk.id] = _fresh_id(chunk.id, self._used_reasoning)
            self._emit({"type": "reasoning-start", "id": wire})

    def reasoning_delta(self, chunk: ReasoningDelta) -> None:
        """Send a reasoning delta, opening its part first if need be."""
        wire = self._reasoning.get(chunk.id)
        if wire is None:
            self.reasoning_start(ReasoningStart(id=chunk.id))
            wire = self._reasoning[chunk.id]
        self._emit({"type": "reasoning-delta", "id": wire, "delta": chunk.delta})

    def reasoning_end(self, chunk: ReasoningEnd) -> None:
        """End an open reasoning part."""
        wire = self._reasoning.pop(chunk.id, None)
        if wire is not None:
            self._emit({"type": "reasoning-end", "id": wire})
