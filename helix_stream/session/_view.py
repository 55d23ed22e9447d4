"""A turn's view of its session, derived from the one snapshot it reads.

This module owns :class:`SessionView`: the typed bookkeeping (:class:`~._meta.TurnMeta`), the
calls a paused turn left waiting and the answers they have (recorded on the session, or given
to this run), the client tool deadline, and the tools switched off *now* — by the log's rows
and by switch-offs still queued (an approval answers "may this call run", not "override the
switch").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..context import LogFold, apply_tools_item
from ..store import Snapshot
from ..store._shared import STEER_SOURCE
from ._answers import ApprovalAnswer, ToolAnswer, by_call
from ._meta import Answer, TurnMeta
from ._pending import WaitingCall, waiting_calls

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["SessionView"]


class SessionView:
    """What a turn knows of its session before it writes anything.

    Args:
        snapshot: The session as read once at the start of the turn.
        agent: The agent the turn runs.
        given: Answers passed to this run (they win over recorded ones; answers to calls
            the session does not wait on are left out: a chat client sends every tool part it
            ever saw, settled ones included).

    Attributes:
        meta: The engine's bookkeeping.
        waiting: The calls the last turn left waiting, in call order.
        answers: Every answer to a waiting call, by call id.
        deadline: When client tool answers stop counting (``None``: no deadline).
    """

    def __init__(
        self, snapshot: Snapshot, agent: Agent, given: Sequence[ApprovalAnswer | ToolAnswer]
    ) -> None:
        self.snapshot = snapshot
        session = snapshot.session
        self.meta = TurnMeta.read(session.meta) if session is not None else TurnMeta()
        self.waiting: list[WaitingCall] = waiting_calls(snapshot.log)
        ids = {w.call.id for w in self.waiting}
        recorded = {k: v for k, v in self.meta.answers.items() if k in ids}
        # Where a parked call's sign-in stands is the callback's word: no answer a client
        # sends (it resends the approvals it saw) takes its place.
        signed = {k: v for k, v in recorded.items() if v.authorization is not None}
        self.answers: dict[str, Answer] = {**recorded, **by_call(given, self.waiting)[0], **signed}
        self.deadline: float | None = None
        if agent.client_tool_timeout is not None and self.meta.paused_at is not None:
            self.deadline = float(self.meta.paused_at) + agent.client_tool_timeout

    @property
    def waits_for_nothing(self) -> bool:
        """The session's last turn ended with the assistant's answer and nothing waits: a run
        without a new message would only store a second answer after the first (refused)."""
        if self.waiting or not self.meta.ended:
            return False
        if any(entry.source == STEER_SOURCE for entry in self.snapshot.pending):
            return False  # a message steered too late waits: the run answers it
        messages = [r for r in self.snapshot.log if r.role != "context"]
        return bool(messages) and messages[-1].role == "assistant"

    @property
    def inactive_now(self) -> frozenset[str]:
        """The tools switched off by the log's rows and by switch-offs still queued."""
        fold = LogFold()
        fold.add(self.snapshot.log)
        inactive = set(fold.inactive)
        for entry in self.snapshot.pending:
            for item in entry.items:
                if item.get("kind") == "tools":
                    apply_tools_item(inactive, {**item, "source": item.get("source", entry.source)})
        return frozenset(inactive)
