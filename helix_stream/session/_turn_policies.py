"""``Executor.steer`` and ``Executor.queue``: a user message that arrives while a turn runs.

The executor's two ways to take such a message (docs/guides/serving.md, "Steering"); the
chat server picks one by its ``turn_policy``. The rules are their modules':
:mod:`._steering` (delivered to the running turn at its next step) and :mod:`._queued` (run
as the next turn, in order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from .._limits import check_session_id
from ._input import Input, checked_input
from ._queued import QUEUE_TIMEOUT, QueuedTurns
from ._steering import Steered, steer

if TYPE_CHECKING:
    from ..agent import Agent, OutputT
    from ..loop import StreamTextResult
    from ..store import Store

__all__ = ["TurnPolicies"]


class _Turns(Protocol):
    """What ``queue`` uses of the executor: its turns (``run``'s checks, ``start``)."""

    def run(
        self, agent: Agent[OutputT], session_id: str, input: Input = None, **run: Any
    ) -> StreamTextResult[OutputT]: ...

    async def start(
        self, agent: Agent[OutputT], session_id: str, input: Input = None, **run: Any
    ) -> StreamTextResult[OutputT]: ...


class TurnPolicies:
    """The executor's ``steer`` and ``queue``."""

    if TYPE_CHECKING:
        store: Store
        _queued: QueuedTurns

    async def steer(
        self, session_id: str, message: Input, *, message_id: str | None = None
    ) -> Steered:
        """Deliver a user's ``message`` to the session's running turn, at its next step.

        Stored at once (durably, once per ``message_id``), in the store every replica shares:
        the turn appends it as a user message before its next model call; a turn that was
        giving its final answer answers it in a new turn right after, in the same stream.

        Example::

            steered = await executor.steer("chat-1", "Use Paris, Texas instead.")
            if not steered.running:
                run = executor.run(agent, "chat-1")  # no turn ran: this one answers it

        Args:
            session_id: The session.
            message: The user's message (a string or a message dict).
            message_id: The client's id of the message: sent twice, it is stored once.

        Returns:
            :class:`~helix_stream.session.Steered`: ``running=False`` when no turn runs (a
            ``run()`` without input answers the message).

        Raises:
            InvalidRequestError: ``message`` has the wrong shape (nothing written).
            SessionNotFoundError: no such session (nothing written).
        """
        check_session_id(session_id)
        return await steer(self.store, session_id, checked_input(message), message_id)

    async def queue(
        self,
        session_id: str,
        message: Input,
        *,
        agent: Agent[OutputT],
        max_wait: float = QUEUE_TIMEOUT,
        **run: Any,
    ) -> StreamTextResult[OutputT]:
        """Run ``message`` as the session's next turn once the running one has ended: wait
        (after the messages queued before it in this executor), then :meth:`start` it.

        Example::

            run = await executor.queue("chat-1", "And in Lyon?", agent=agent)
            async for chunk in run: ...

        Args:
            session_id: The session.
            message: The user's message.
            agent: The agent that runs the turn.
            max_wait: Seconds to wait for the running turn to end.
            **run: As for :meth:`start` (``message_id``, ``auth``, run options, ...).

        Raises:
            SessionBusyError: a turn still ran after ``max_wait`` (nothing written).
            InvalidRequestError: as :meth:`start`, before any wait (nothing written).
        """
        turns = cast("_Turns", self)  # an Executor: its run() and start()
        turns.run(agent, session_id, message, **run)  # its refusals now, before any wait
        return await self._queued.start(
            self.store,
            session_id,
            lambda: turns.start(agent, session_id, message, **run),
            timeout=max_wait,
        )
