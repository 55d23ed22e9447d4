"""One turn of one session: what ``Executor.run`` sets going.

A turn reads its session **once** (a :class:`~helix_stream.store.Snapshot`), refuses what
cannot run before anything is written, and then writes only at its boundaries, one
transaction each:

1. **open** (:func:`~._open.open_turn`): the first commit claims the session (``running``, a
   compare-and-set, creating it on first use) together with the user's message and the first
   context pass (the queue, the step_context hook's rows, the memory row). A turn that
   settles a paused one's calls claims first, alone, because approved calls run before its
   first commit;
2. **each step** (:class:`~._turn_log.TurnLog`, in the turn environment the loop is handed,
   :func:`~._turn_env.turn_env`): its messages and a
   checkpoint (the define_state snapshot); the last step also sets the new status (``idle``,
   or ``paused`` for answers);
3. only when a turn fails or is cut short (:func:`~._finish.finish_turn`): its status
   (``failed`` or ``idle``), with the text of the step it cut short.

Every one of them carries the turn's lease (:mod:`._lease`), which a heartbeat renews in
between; a session whose lease expired is taken over by the next turn's claim.

:func:`run_turn` strings them together: it opens the turn, builds the loop's config once
(:func:`~helix_stream.loop._setup.loop_config`: the log as the model sees it, the message id,
the turn environment) and runs the loop, whose chunks it passes on untouched.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace

from ..chunks import Chunk, ErrorChunk
from ..loop._run import run_loop
from ..loop._setup import RunSetup, loop_config
from ._lease import TurnLease
from ._open import open_turn
from ._request import TurnRequest
from ._steering import FOLLOW_UP, FollowUp, follow_ups
from ._turn_env import turn_env
from ._turn_log import TurnLog

__all__ = ["run_turn"]


async def run_turn(request: TurnRequest) -> AsyncGenerator[Chunk, None]:
    """The chunks of one turn (the generator behind its ``StreamTextResult``), and of the
    turns right after it that answer messages steered to it too late (:mod:`._steering`)."""
    async with aclosing(follow_ups(request, _one_turn)) as chunks:
        async for chunk in chunks:
            yield chunk


async def _one_turn(request: TurnRequest) -> AsyncGenerator[Chunk | FollowUp, None]:
    """The chunks of one turn; :data:`FOLLOW_UP` last when its end saw a steered message."""
    lease = TurnLease(request.writer, request.session_id, request.on_stop_requested)
    lease.start()  # it renews once the claim applied
    try:
        try:
            opened = await open_turn(request)
        except Exception as exc:
            # A refusal, or a failure open_turn logged (and, if it had claimed the session,
            # ended).
            yield ErrorChunk(error=exc)
            return
        env = turn_env(opened)
        setup = opened.request.setup  # with the MCP servers' tools: the run's one setup
        assert isinstance(setup, RunSetup)
        config = loop_config(
            setup,
            messages=opened.messages,
            message_id=opened.message_id,
            env=env,
        )
        # One stream for the turn: the session's own events and its run's.
        config = replace(config, events=opened.events.stream)
        # The loop tells the turn's log how it ended (TurnLog.end), which ends the turn if
        # need be.
        async with aclosing(run_loop(config)) as chunks:
            async for chunk in chunks:
                yield chunk
        if isinstance(env.log, TurnLog) and env.log.follow_up:
            yield FOLLOW_UP
    finally:
        await lease.stop()
