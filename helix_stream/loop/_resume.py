"""The resume step: a turn that carries on a paused one settles the calls it waited for before
its first model call, with the same tool runner as a step (its limits, callbacks and chunks).

The session decides, from its stored answers, what becomes of each waiting call
(``session/_pending.py``): a result it settles itself (denied, cancelled, a client's answer,
switched off meanwhile), or *run it* (approved, or signed in). This step streams each call's
announcement and settled result, runs the calls to run (the gate settled them: they run as
they are; a call re-run right after its sign-in never parks again), and returns what they
produced (:class:`~helix_stream.loop._env.Resumed`), which the session commits with the first
model call's context.

With a new user message the waiting calls belong to an *earlier* UI message than the turn's
answer: their results are sent as :class:`~helix_stream.chunks.ToolSettled` chunks naming that
message (and not announced again), so a chat UI shows each where a reload shows it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from typing import Any

from ..chunks import (
    Chunk,
    ToolCancelled,
    ToolInputAvailable,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    ToolSettled,
)
from ..steps import ToolCall
from ._env import Resume, Resumed
from ._tools import ToolCalls

__all__ = ["ResumeStep"]


_RESULTS = (ToolOutputAvailable, ToolOutputError, ToolOutputDenied, ToolNotExecuted, ToolCancelled)

# Makes the runner of the calls to run: (calls, the signed-in ones) -> ToolCalls.
Runner = Callable[[Sequence[ToolCall], frozenset[str]], ToolCalls]


class ResumeStep:
    """Settles a :class:`Resume`. Iterate :meth:`chunks`, then read :meth:`outcome`."""

    def __init__(self, resume: Resume, runner: Runner) -> None:
        self._resume = resume
        self._runner = runner
        self._outcome = Resumed(ran={}, parked=frozenset())

    def outcome(self) -> Resumed:
        return self._outcome

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        earlier = {c.call.id: c for c in self._resume.calls} if self._resume.moved_on else {}
        async with aclosing(self._settle()) as chunks:
            async for chunk in chunks:
                waiting = earlier.get(getattr(chunk, "tool_call_id", ""))
                if waiting is None:
                    yield chunk  # not about a waiting call (a tool's data part): as it is
                elif isinstance(chunk, _RESULTS):
                    name, message_id = waiting.call.name, waiting.ui_message_id
                    yield ToolSettled(message_id=message_id, tool_name=name, result=chunk)
                # else: the call's announcement; the earlier message shows the call already

    async def _settle(self) -> AsyncGenerator[Chunk, None]:
        to_run = []
        for waiting in self._resume.calls:
            call = waiting.call
            yield ToolInputAvailable(tool_call_id=call.id, tool_name=call.name, input=call.input)
            if waiting.settled is None:
                to_run.append(call)
            else:
                yield waiting.settled[1]
        if not to_run:
            return
        signed_in = frozenset(w.call.id for w in self._resume.calls if w.signed_in)
        calls = self._runner(to_run, signed_in)
        async with aclosing(calls.chunks()) as chunks:
            async for chunk in chunks:
                yield chunk
        outcome = calls.outcome()
        statuses = {r.tool_call_id: r.status for r in outcome.results}
        ran: dict[str, tuple[dict[str, Any], str]] = {
            m["tool_call_id"]: (m, statuses[m["tool_call_id"]]) for m in outcome.messages
        }
        parked = frozenset(r.tool_call_id for r in outcome.results if r.status == "pending")
        results = {r.tool_call_id: r for r in outcome.results}
        self._outcome = Resumed(ran=ran, parked=parked, results=results)
