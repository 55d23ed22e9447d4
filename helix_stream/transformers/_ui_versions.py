"""Which UI chunk types a client of each ``ai`` major version gets (v5, v6, v7).

Owned here: the per-major whitelist of UI chunk types (the ``ai`` package's
``uiMessageChunkSchema``; docs/ui-message-stream.md, "Chunk types"), ``data-*`` aside, and the
internal chunk types that only a newer major is sent at all (:func:`gated`). The mapper
enforces the whitelist at its single exit and builds its dispatch table through :func:`gated`
once per stream, so nothing here runs per chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from helix_stream.chunks import SteeringMessage, ToolApprovalRequest, ToolOutputPreliminary

__all__ = ["ALLOWED", "gated"]

_V5 = frozenset(
    {
        "start", "start-step", "finish-step", "finish", "abort", "error",
        "text-start", "text-delta", "text-end",
        "reasoning-start", "reasoning-delta", "reasoning-end",
        "tool-input-start", "tool-input-delta", "tool-input-available", "tool-input-error",
        "tool-output-available", "tool-output-error",
        "source-url", "source-document", "file", "message-metadata",
    }
)  # fmt: skip
_V6 = _V5 | {"tool-approval-request", "tool-output-denied"}
_V7 = _V6 | {"tool-approval-response", "custom", "reasoning-file", "reset-step", "steering-message"}
# The UI chunk types (besides ``data-*``) that an ``ai`` client of each major accepts.
ALLOWED: Mapping[int, frozenset[str]] = {5: _V5, 6: _V6, 7: _V7}

# The internal chunk types a client older than the given major is not sent at all.
_SINCE: Mapping[type, int] = {
    # ai@5.0.0's chunk schema refuses the `preliminary` key.
    ToolOutputPreliminary: 6,
    # ai@5 knows no approval parts.
    ToolApprovalRequest: 6,
    # ai@7 shows a steered message in place; ai@5/6 know no such part (their clients see it
    # in the stored messages: GET .../messages).
    SteeringMessage: 7,
}

_H = TypeVar("_H", bound=Callable[[Any], None])


def gated(handlers: Mapping[type, _H], version: int, drop: _H) -> dict[type, _H]:
    """``handlers`` with ``drop`` in place of each chunk type an ``ai@<version>`` client is not
    sent.

    Example:
        >>> def show(chunk: object) -> None: ...
        >>> def drop(chunk: object) -> None: ...
        >>> gated({SteeringMessage: show}, 6, drop)[SteeringMessage] is drop
        True
    """
    return {
        kind: drop if version < _SINCE.get(kind, 0) else handler
        for kind, handler in handlers.items()
    }
