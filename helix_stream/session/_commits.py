"""The context pass of each model call of a turn, committed in one store write.

Before each model call the pass (:class:`~helix_stream.context.ContextPass`) gathers the
step_context hook's rows and the memory row; :meth:`Commits.commit` writes them together with
everything queued for the session — and, for the turn's first call, its opening write: the
user's message, the results of the calls a paused turn left, the turn's bookkeeping, the
claim — in one transaction, and returns what the loop appends
(:class:`~helix_stream.loop._env.StepCommit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..chunks import Chunk, ContextRowChunk
from ..context import ContextPass, ContextRow, Gathered
from ..errors import SessionBusyError
from ..loop._env import StepCommit
from ..state import SessionScope, bind_scope
from ..store import LogRecord, SessionStatus, TurnWrite
from ._lease import TurnWriter
from ._meta import TurnMeta
from ._steering import steering_chunks
from ._view import SessionView

__all__ = ["RUNNABLE", "Commits", "Written", "busy", "last_seq", "opened_meta", "opening"]

# The statuses a turn may start from (a compare-and-set when it claims the session).
RUNNABLE: tuple[SessionStatus, ...] = ("idle", "paused", "failed")

_NOTHING = TurnWrite()


def busy(session_id: str) -> SessionBusyError:
    return SessionBusyError(f"session {session_id!r} is already running; wait for its turn to end")


def last_seq(view: SessionView) -> int:
    """Where the session's log ended when the turn read it."""
    log = view.snapshot.log
    return log[-1].seq if log else 0


def opening(
    view: SessionView,
    meta: TurnMeta,
    *,
    message: dict[str, Any] | None,
    settled: Sequence[dict[str, Any]] = (),
    rows: Sequence[dict[str, Any]] = (),
    recovered: Sequence[dict[str, Any]] = (),
) -> TurnWrite:
    """The part of a turn's first commit that opens it: the settled calls' tool messages, what
    a takeover recovered (``_open``), the user's message, late-answer ``rows``, and the
    bookkeeping (where the turn's model calls start in the log; the settled calls' answers
    cleared)."""
    messages = [*settled, *recovered, *([message] if message is not None else [])]
    patch = meta.starting_at(last_seq(view) + len(messages))
    patch.update(meta.settled([w.call.id for w in view.waiting]))
    return TurnWrite(messages=messages, rows=list(rows), meta=patch)


def opened_meta(view: SessionView, meta: TurnMeta, write: TurnWrite) -> TurnMeta:
    """``meta`` as the opening ``write`` (made by :func:`opening`) records it: the turn's
    model calls start after its messages."""
    return replace(meta, start_seq=last_seq(view) + len(write.messages))


@dataclass(frozen=True, slots=True)
class Written:
    """A commit as written: its records, and what the hook and the memory recall brought."""

    records: list[LogRecord]
    gathered: Gathered


class Commits:
    """The context commits of one turn.

    Args:
        writer: How the turn writes its session (with its lease).
        session_id: The session.
        context_pass: The turn's context pass (it folds and renders what is committed).
        scope: The turn's session scope, bound while the step_context hook and the memory
            recall run (``define_state`` and ``current_session()`` work there).
    """

    def __init__(
        self, writer: TurnWriter, session_id: str, context_pass: ContextPass, scope: SessionScope
    ) -> None:
        self.writer = writer
        self.session_id = session_id
        self.context_pass = context_pass
        self.scope = scope

    async def commit(
        self,
        step_number: int,
        write: TurnWrite = _NOTHING,
        *,
        user_text: str | None = None,
        gather: bool = True,
    ) -> StepCommit:
        """Commit the context of one model call with ``write``; see :meth:`write`."""
        return self.taken(await self.write(step_number, write, user_text=user_text, gather=gather))

    async def write(
        self,
        step_number: int,
        write: TurnWrite = _NOTHING,
        *,
        user_text: str | None = None,
        gather: bool = True,
    ) -> Written:
        """Gather the hook's and the memory's rows for call ``step_number`` (``user_text``: the
        user's new message, which memory recalls for) and write them with the queue and
        ``write`` (without ``gather``, only the queue and ``write``: the hook and memory have
        run for this call).

        Raises:
            SessionBusyError: ``write`` claims the session and it is running (nothing written).
        """
        gathered = Gathered()
        if gather:
            with bind_scope(self.scope):
                gathered = await self.context_pass.gather(step_number, user_text=user_text)
        write = replace(write, deliver_queue=True, rows=[*write.rows, *gathered.rows])
        result = await self.writer.write_turn(self.session_id, write)
        if not result.applied:
            raise busy(self.session_id)
        return Written(records=result.records, gathered=gathered)

    def taken(self, written: Written) -> StepCommit:
        """What the loop appends for a commit: its records as the model sees them (folded into
        the pass), and the chunks of the steered messages it delivered, its rows and skips."""
        messages = self.context_pass.take(written.records)
        rows: list[Chunk] = [
            ContextRowChunk(row=ContextRow.from_record(r))
            for r in written.records
            if r.role == "context"
        ]
        steered = steering_chunks(written.records)
        return StepCommit(messages=messages, chunks=[*steered, *rows, *written.gathered.skipped])
