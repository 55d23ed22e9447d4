"""``Executor.answer`` and its two one-answer forms: answers recorded for a paused turn's calls.

An answer to a waiting call is written to the session's meta (the next ``run()`` acts on it);
a client tool's output for a call of the log that waits no more is queued as a ``late-answer``
notice row; an answer naming no call of the session is refused before anything is written.
The answer types and their matching onto waiting calls are :mod:`._answers`'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..context import LATE_ANSWER_SOURCE
from ..errors import StateError
from ._answers import ApprovalAnswer, ToolAnswer, by_call
from ._history import check_idle
from ._meta import TurnMeta
from ._pending import late_answer_row, waiting_calls

if TYPE_CHECKING:
    from ..store import LogRecord, Store

__all__ = ["Answers", "SessionAnswers"]

Answers = Sequence[ApprovalAnswer | ToolAnswer]


class SessionAnswers:
    """The executor's ``answer``, ``respond_to_approval`` and ``submit_tool_result``."""

    store: Store

    async def answer(self, session_id: str, answers: Answers) -> None:
        """Record answers to the calls a paused turn left waiting; the next ``run()`` of the
        session acts on them.

        An approval runs its call — unless the tool was switched off meanwhile (even by a
        switch-off still queued): then nothing runs and the call gets ``tool_inactive``. A
        client tool's output that answers no waiting call but a call of the log (one already
        settled as timed out, say) is delivered as a ``late-answer`` notice row instead.

        Raises:
            SessionNotFoundError: no such session.
            SessionBusyError: the session is running.
            StateError: an answer names no call of the session (nothing was written).
        """
        snapshot = await self.store.read_snapshot(session_id)
        check_idle(session_id, snapshot.session)
        waiting = waiting_calls(snapshot.log)
        matched, unmatched = by_call(answers, waiting)
        late = [_late_row(snapshot.log, answer) for answer in unmatched]
        for answer, row in zip(unmatched, late, strict=True):
            if row is None:
                raise _unknown_call(session_id, answer)
        patch: dict[str, Any] = {}
        for call_id, recorded in matched.items():
            patch.update(TurnMeta.answer(call_id, recorded))
        if patch:
            await self.store.update_session_meta(session_id, patch)
        rows = [row for row in late if row is not None]
        if rows:
            # Queued, not appended: the log may end with calls still waiting for their results.
            await self.store.enqueue_context(
                session_id,
                [{k: v for k, v in row.items() if k != "origin"} for row in rows],
                source=LATE_ANSWER_SOURCE,
                origin={"type": LATE_ANSWER_SOURCE},
            )

    async def respond_to_approval(
        self, session_id: str, approval_id: str, approved: bool, reason: str | None = None
    ) -> None:
        """Answer one ``tool-approval-request`` (see :meth:`answer`).

        Raises:
            SessionNotFoundError, SessionBusyError, StateError: as :meth:`answer`.
        """
        await self.answer(session_id, [ApprovalAnswer(approval_id, bool(approved), reason)])

    async def submit_tool_result(self, session_id: str, tool_call_id: str, output: Any) -> None:
        """Give a client tool's answer (see :meth:`answer`).

        Raises:
            SessionNotFoundError, SessionBusyError, StateError: as :meth:`answer`.
        """
        await self.answer(session_id, [ToolAnswer(tool_call_id, output)])


def _unknown_call(session_id: str, answer: ApprovalAnswer | ToolAnswer) -> StateError:
    if isinstance(answer, ApprovalAnswer):
        return StateError(
            f"no call of session {session_id!r} is waiting for approval {answer.approval_id!r}"
        )
    return StateError(f"session {session_id!r} has no tool call {answer.tool_call_id!r}")


def _late_row(
    log: Sequence[LogRecord], answer: ApprovalAnswer | ToolAnswer
) -> dict[str, Any] | None:
    """The late-answer row of a client answer to a call of the log that waits no more."""
    if not isinstance(answer, ToolAnswer):
        return None
    for record in log:
        if record.role != "assistant":
            continue
        for call in record.payload.get("tool_calls") or []:
            if call["id"] == answer.tool_call_id:
                return late_answer_row(call["function"]["name"], call["id"], answer.output)
    return None
