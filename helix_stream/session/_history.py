"""``SessionHistory``: what an executor does with a session's history: read it (its usage
totals too), rewind it (``retry``, ``regenerate``, ``resume``) and branch it.
:class:`Executor` inherits it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from .._limits import show
from .._usage_limits import UsageTotals
from ..context import ContextRow
from ..errors import InvalidRequestError, SessionBusyError, SessionNotFoundError, StateError
from ..store import Checkpoint, LogRecord, SessionRecord, Store
from ._meta import TurnMeta, app_meta, forget_sandboxes, sign_in_links
from ._records import AssistantRecord, UserRecord
from ._ui import ui_messages
from ._usage import session_usage

__all__ = ["SessionHistory", "check_idle"]


class SessionHistory:
    """Reading, rewinding and branching sessions of ``store`` (the base of ``Executor``)."""

    store: Store

    # -- rewinds and branches ---------------------------------------------------------------

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first: one per finished step (log position,
        active tools, define_state snapshot).

        Raises:
            SessionNotFoundError: no such session.
        """
        return await self.store.checkpoints(session_id)

    async def _checkpoint(self, session_id: str, checkpoint_id: str) -> Checkpoint:
        for checkpoint in await self.store.checkpoints(session_id):
            if checkpoint.id == checkpoint_id:
                return checkpoint
        raise StateError(f"session {session_id!r} has no checkpoint {checkpoint_id!r}")

    async def retry(self, session_id: str, checkpoint_id: str | None = None) -> None:
        """Make the session's last turn (or everything after a checkpoint) run again.

        With a ``checkpoint_id``, the log is truncated after that checkpoint (context rows like
        any other row: queued items whose rows go are delivered again, once; the step_context
        cursor, memory and active tools follow what is left; the define_state snapshot is the
        checkpoint's). Without one: a last turn that ended (answered) is run again from its
        start — its answer goes, its user message stays; a failed turn whose step committed
        keeps everything, including the context rows of the step that failed, which the retry
        re-runs; a turn that failed on its first step is retried from its start, so that step's
        rows are made again (never lost, never doubled). Then ``run(agent, session_id)``
        continues.

        Example::

            await executor.retry(session_id)
            result = await executor.run(agent, session_id).consume()

        Raises:
            SessionNotFoundError, StateError, SessionBusyError: unknown session, checkpoint; running
        """
        session = await self.store.get_session(session_id)
        check_idle(session_id, session)
        assert session is not None
        last = await self.store.last_seq(session_id)
        if checkpoint_id is not None:
            to_seq = (await self._checkpoint(session_id, checkpoint_id)).log_seq
        else:
            turn = TurnMeta.read(session.meta)
            checkpoints = await self.store.checkpoints(session_id)
            committed = bool(checkpoints) and checkpoints[-1].log_seq > turn.start_seq
            # An answered turn re-runs whole; a failed one carries on after its last commit.
            ended = turn.ended and session.status == "idle"
            to_seq = last if committed and not ended else turn.start_seq
        if to_seq < last:
            await self.store.rewind(session_id, to_seq)
        await self.store.set_status(session_id, "idle", expect=("idle", "paused", "failed"))

    async def regenerate(self, session_id: str, message_id: str | None = None) -> None:
        """Rewind the session to just after the user message that assistant message
        ``message_id`` answers (default: the last user message), so that the next
        ``run(agent, session_id)`` produces that answer again — what the AI SDK's
        ``regenerate()`` asks a server for.

        Everything after that user message goes, by the rewind rules of :meth:`retry` (queued
        items delivered again once, a tool's items with its call, the cursor reverting): an
        earlier message's regeneration truncates the conversation after it.

        Raises:
            SessionNotFoundError, SessionBusyError: no such session, the session is running.
            InvalidRequestError: the session has no assistant message ``message_id``, or no
                user message to answer.
        """
        snapshot = await self.store.read_snapshot(session_id)
        check_idle(session_id, snapshot.session)
        log = snapshot.log
        end = len(log)
        if message_id is not None:
            end = next(
                (
                    i
                    for i, r in enumerate(log)
                    if r.role == "assistant"
                    and AssistantRecord.decode(r.payload).message_id == message_id
                ),
                -1,
            )
            if end < 0:
                raise InvalidRequestError(
                    f"session {session_id!r} has no assistant message {message_id[:200]!r}"
                )
        users = [r.seq for r in log[:end] if r.role == "user"]
        if not users:
            raise InvalidRequestError(f"session {session_id!r} has no user message to answer")
        if users[-1] < log[-1].seq:
            await self.store.rewind(session_id, users[-1])
        await self.store.set_status(session_id, "idle", expect=("idle", "paused", "failed"))

    async def _rewind_before(self, session_id: str, message_id: str) -> bool:
        """Rewind the session to just before its user message ``message_id`` (by the rewind
        rules of :meth:`retry`), so that the next turn replaces that message: what ``useChat``
        asks by ``sendMessage({..., messageId})`` (an edit; the way out of a stored file a
        provider refuses, README "Regenerate, files and data parts").

        Returns:
            Whether the session has that message (if not, nothing was written).

        Raises:
            SessionNotFoundError, SessionBusyError: no such session, the session is running.
        """
        snapshot = await self.store.read_snapshot(session_id)
        check_idle(session_id, snapshot.session)
        seq = next(
            (
                r.seq
                for r in snapshot.log
                if r.role == "user" and UserRecord.decode(r.payload).message_id == message_id
            ),
            None,
        )
        if seq is None:
            return False
        await self.store.rewind(session_id, seq - 1)
        await self.store.set_status(session_id, "idle", expect=("idle", "paused", "failed"))
        return True

    async def resume(
        self, session_id: str, mode: str = "continue", checkpoint_id: str | None = None
    ) -> None:
        """Make a session runnable again.

        ``mode="continue"`` recovers a session whose process died mid-turn (its status is still
        ``running``): the log is kept as it is — a step lost after its context rows were
        committed keeps them, and the recovering step's hook starts from their cursor. The
        next run does this by itself once the dead turn's lease expired (README, "Reliability
        notes"); ``resume()`` frees the session at once, and a turn still running elsewhere
        then finds its lease gone: its later writes are refused. ``mode="from_checkpoint"`` rewinds
        to ``checkpoint_id`` as :meth:`retry` does. Then ``run(agent, session_id)`` continues.

        Raises:
            SessionNotFoundError, StateError, InvalidRequestError: unknown session, checkpoint, mode
        """
        await self.session(session_id)
        if mode == "continue":
            await self.store.set_status(session_id, "idle", expect=("running", "failed"))
        elif mode == "from_checkpoint":
            if checkpoint_id is None:
                raise InvalidRequestError("resume(mode='from_checkpoint') needs checkpoint_id=")
            await self._checkpoint(session_id, checkpoint_id)  # refuse before writing anything
            await self.store.set_status(session_id, "idle", expect=("running", "failed", "paused"))
            await self.retry(session_id, checkpoint_id)
        else:
            raise InvalidRequestError(
                f"unknown resume mode {mode!r}; use 'continue' or 'from_checkpoint'"
            )

    async def branch(
        self, session_id: str, checkpoint_id: str | None = None, new_session_id: str | None = None
    ) -> str:
        """Copy the session up to a checkpoint (default: all of it) into a new session.

        The copy keeps the rows with their cursor and their effect on the active tools, but
        never the source's queue: an item still queued in the source is delivered only there.

        Returns:
            The new session's id.
        """
        await self.session(session_id)
        if checkpoint_id is not None:
            upto = (await self._checkpoint(session_id, checkpoint_id)).log_seq
        else:
            upto = await self.store.last_seq(session_id)
        new_id = new_session_id or f"{session_id}-branch-{uuid.uuid4().hex[:8]}"
        branch = await self.store.branch(session_id, new_id, upto_seq=upto)
        # The copy's own bookkeeping: its log ends at `upto`; the source's answers and pause
        # are the source's (an answer for a call of the source is not one for the branch).
        meta = TurnMeta.read(branch.meta)
        # A branch gets fresh sandboxes: the source's are the source's.
        fresh = forget_sandboxes(branch.meta)
        await self.store.update_session_meta(
            new_id, {**meta.foreign_answers(), **meta.starting_at(upto), **fresh}
        )
        return new_id

    # -- reading ---------------------------------------------------------------------------

    async def session(self, session_id: str) -> SessionRecord:
        """The session record; its ``meta`` is the app's own (the engine's keys left out).

        Raises:
            SessionNotFoundError: no such session.
        """
        record = await self.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(f"no session {show(session_id)}")
        return replace(record, meta=app_meta(record.meta))

    async def usage(self, session_id: str) -> UsageTotals:
        """The session's usage totals (calls, tokens, cost: ``hs.UsageTotals``), kept in the
        store so they survive restarts. Example: ``totals = await executor.usage("chat-1")``.

        Raises:
            SessionNotFoundError: no such session.
        """
        return await session_usage(self.store, session_id)

    async def log(self, session_id: str) -> list[LogRecord]:
        """The session's whole log: messages and context rows, in order (for servers and audit)."""
        return await self.store.read_log(session_id)

    async def context_rows(self, session_id: str) -> list[ContextRow]:
        """The session's committed context rows, in order."""
        return [
            ContextRow.from_record(r)
            for r in await self.store.read_log(session_id)
            if r.role == "context"
        ]

    async def ui_messages(
        self,
        session_id: str,
        *,
        client_version: int = 7,
        on_error: Callable[[BaseException], str] | None = None,
        send_sources: bool = False,
    ) -> list[dict[str, Any]]:
        """The session as AI SDK UIMessages, for a chat UI; never contains context rows.

        The parts are what the live stream showed a client of ``client_version``: a tool's
        error text is masked unless ``on_error`` (given a
        :class:`~helix_stream.errors.ToolFailedError`) chooses the text; the sources the
        model cited are parts only with ``send_sources``.

        A session that does not exist yet has no messages (``[]``), as ``GET .../messages``
        answers: a chat's session is created by its first message, under the id the client
        chose.
        """
        snapshot = await self.store.read_snapshot(session_id)
        if snapshot.session is None:
            return []
        return ui_messages(
            snapshot.log,
            client_version=client_version,
            on_error=on_error,
            send_sources=send_sources,
            sign_ins=sign_in_links(snapshot.session.meta),
        )


def check_idle(session_id: str, session: SessionRecord | None) -> None:
    if session is None:
        raise SessionNotFoundError(f"no session {show(session_id)}")
    if session.status == "running":
        raise SessionBusyError(
            f"session {session_id!r} is running a turn; wait for it to end. A turn whose "
            "process died frees the session once its lease expires (seconds), and the next run "
            "takes it over."
        )
