"""Answers to a paused turn's calls, as callers give them.

An app answers an approval by its approval id (what ``tool-approval-request`` announced) and a
client tool by its tool call id. This module owns those two input types and their mapping onto
the calls a session waits on (:func:`by_call`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..tools import approval_id
from ._meta import Answer
from ._pending import WaitingCall

__all__ = ["ApprovalAnswer", "ToolAnswer", "by_call"]


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """The app's (or the user's) answer to a ``tool-approval-request``.

    Example::

        run = executor.run(agent, "session-1", answers=[hs.ApprovalAnswer("approval-call_1", True),
                                                      hs.ApprovalAnswer("approval-call_2", False,
                                                                        reason="not today")])
    """

    approval_id: str
    approved: bool
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """A client tool's output for call ``tool_call_id``.

    Example::

        run = executor.run(agent, "session-1", answers=[hs.ToolAnswer("call_3", {"city": "Oslo"})])
        print(await run.text())                         # the client tool's output reached the model
    """

    tool_call_id: str
    output: Any


def by_call(
    answers: Iterable[ApprovalAnswer | ToolAnswer], waiting: Sequence[WaitingCall]
) -> tuple[dict[str, Answer], list[ApprovalAnswer | ToolAnswer]]:
    """The answers for calls in ``waiting``, by call id, and the ones that answer no waiting
    call (in the order given)."""
    call_ids = {w.call.id for w in waiting}
    by_approval = {approval_id(w.call.id): w.call.id for w in waiting}
    matched: dict[str, Answer] = {}
    unmatched: list[ApprovalAnswer | ToolAnswer] = []
    now = time.time()
    for answer in answers:
        if isinstance(answer, ApprovalAnswer) and answer.approval_id in by_approval:
            matched[by_approval[answer.approval_id]] = Answer(
                approved=bool(answer.approved), reason=answer.reason
            )
        elif isinstance(answer, ToolAnswer) and answer.tool_call_id in call_ids:
            matched[answer.tool_call_id] = Answer(output=answer.output, at=now)
        else:
            unmatched.append(answer)
    return matched, unmatched
