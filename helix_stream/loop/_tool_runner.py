"""The runner of a step's (or the resume step's) tool calls, built from the run's state.

This module owns :func:`tool_calls`: a :class:`~helix_stream.loop._tools.ToolCalls` over the
run's tools, their resolved contexts, its clock, its tool callbacks (``ToolWatch``) and its
session's call factory and auth. How the calls run is ``loop/_tools.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._event_stream import EventStream
from .._timeout import RunClock
from ..steps import ToolCall
from ._config import LoopConfig
from ._lifecycle import ToolWatch
from ._tools import ToolCalls, ToolRun

__all__ = ["tool_calls"]


def tool_calls(
    cfg: LoopConfig,
    calls: Sequence[ToolCall],
    step_number: int,
    *,
    contexts: Mapping[str, Any],
    clock: RunClock,
    events: EventStream,
    inactive: frozenset[str] = frozenset(),
    secrets: frozenset[str] = frozenset(),
    approved: frozenset[str] = frozenset(),
    signed_in: frozenset[str] = frozenset(),
    can_park: bool = True,
) -> ToolCalls:
    """The runner of a step's (or the resume step's) tool calls."""
    return ToolCalls(
        calls,
        tools=cfg.tools,
        contexts=contexts,
        recorder=cfg.recorder,
        factory=cfg.env.calls,
        inactive=inactive,
        approved=approved,
        secrets=secrets,
        auth=cfg.env.calls.auth or cfg.auth,
        signed_in=signed_in,
        can_park=can_park,
        run=ToolRun(
            clock=clock,
            watch=ToolWatch.of(events, step_number, cfg.session_id),
            options=cfg.options,
        ),
    )
