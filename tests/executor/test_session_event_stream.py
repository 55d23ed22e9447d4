"""A session's durable events go through the turn's one event stream: each is emitted once,
on the stream its run uses, and reaches the ``define_hook`` handlers as that stream's
subscriber (not through a side door)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

import helix_stream as hs
import helix_stream.session._open as session_open
from helix_stream._event_stream import EventStream, Policy, RunEvent, SessionEvent
from tests.loopback import LoopbackServer, text, tool_calls

WATCHED = frozenset({"turn.started", "context.committed", "step.started", "turn.completed"})


@dataclass
class Counting:
    """A subscriber that counts the session events it sees, and whether a hook saw each
    one while the stream delivered it."""

    kinds: frozenset[str] = WATCHED
    policy: Policy = "observe"
    seen: Counter[str] = field(default_factory=Counter)

    async def handle(self, event: RunEvent) -> None:
        assert isinstance(event, SessionEvent)
        self.seen[event.kind] += 1


async def test_session_events_are_emitted_once_on_the_runs_stream_and_reach_the_hooks(
    executor: hs.Executor, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = Counting()
    made = session_open.run_event_stream

    def with_counting(*args: Any, subscribers: Any = (), **kw: Any) -> EventStream:
        return made(*args, subscribers=(*subscribers, counting), **kw)

    monkeypatch.setattr(session_open, "run_event_stream", with_counting)
    emitted: list[tuple[int, str]] = []  # (the stream, the kind) of each emission
    delivering: list[RunEvent] = []
    emit = EventStream.emit

    async def recorded(self: EventStream, event: RunEvent) -> None:
        emitted.append((id(self), event.kind))
        delivering.append(event)
        try:
            await emit(self, event)
        finally:
            delivering.pop()

    monkeypatch.setattr(EventStream, "emit", recorded)
    handled: list[str] = []

    async def on_event(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        # Delivered by the stream: inside the emission of this very event.
        current = delivering[-1]
        assert isinstance(current, SessionEvent) and current.kind == event.type
        assert current.data == event.data
        handled.append(event.type)
        if event.type == "turn.started":  # queued here, committed (context.committed) next
            assert await ctx.add_context([hs.notice("from the hook")]) == 1

    hook = hs.define_hook(events={kind: on_event for kind in WATCHED})
    loopback.script(tool_calls(("echo", {"text": "hi"})), text("done"))
    echo = hs.tool(name="echo", execute=lambda input: input)
    agent = hs.Agent(
        name="counted",
        model="openai/loopback",
        tools=[echo],
        settings={"api_base": loopback.api_base, "api_key": "k"},
        hooks=[hook],
        max_retries=0,
    )
    await executor.run(agent, "s", "hello").consume()

    expected = Counter({"turn.started": 1, "context.committed": 1, "step.started": 2})
    expected["turn.completed"] = 1
    emitted_kinds = Counter(kind for _, kind in emitted if kind in WATCHED)
    assert emitted_kinds == expected  # each once
    assert counting.seen == expected  # every subscriber sees each once
    assert Counter(handled) == expected  # the hooks, through the stream
    # One stream for the turn: the session's events and the run's (run-started, step-ended).
    assert len({stream for stream, _ in emitted}) == 1
    assert {"run-started", "step-ended", "run-finished"} <= {kind for _, kind in emitted}
    assert handled.index("turn.started") < handled.index("context.committed")
