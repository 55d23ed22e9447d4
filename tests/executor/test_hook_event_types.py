"""Each lifecycle event reaches a handler as its own class (issue 33, "Types all the way"): the
class of its name, ``event.type``/``event.data`` as documented, and ``data``'s keys exactly the
ones its ``TypedDict`` declares (so what a type checker is told is what a handler gets)."""

from __future__ import annotations

import contextlib
from typing import Any

import helix_stream as hs
from helix_stream import hooks
from tests.loopback import LoopbackServer, error, text, tool_calls

from .test_hook_events import agent

EXPECTED = {
    "session.started": hooks.SessionStartedEvent,
    "turn.started": hooks.TurnStartedEvent,
    "step.started": hooks.StepStartedEvent,
    "message.completed": hooks.MessageCompletedEvent,
    "action.result": hooks.ActionResultEvent,
    "step.completed": hooks.StepCompletedEvent,
    "turn.completed": hooks.TurnCompletedEvent,
    "step.failed": hooks.FailureEvent,
    "turn.failed": hooks.FailureEvent,
}


def declared_keys(event: hs.LifecycleEvent) -> tuple[frozenset[str], frozenset[str]]:
    typed_dict: Any = getattr(hooks, type(event).__name__.replace("Event", "Data"))
    return typed_dict.__required_keys__, typed_dict.__optional_keys__


async def test_every_event_arrives_as_its_class_with_the_declared_keys(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[hs.LifecycleEvent] = []
    hook = hs.define_hook(events={"*": lambda event, ctx: seen.append(event)})
    observed = agent(loopback, hooks=[hook])
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("done"))
    await executor.run(observed, "s", "weather").consume()
    loopback.script(error(400, "bad request"))
    with contextlib.suppress(hs.HelixError):  # the turn fails: its events are checked
        await executor.run(observed, "s", "again").consume()

    assert {e.type for e in seen} >= set(EXPECTED), [e.type for e in seen]
    for event in seen:
        assert isinstance(event, hs.LifecycleEvent)
        if event.type in EXPECTED:
            assert type(event) is EXPECTED[event.type], event
        required, optional = declared_keys(event)
        assert required <= event.data.keys() <= required | optional, (event.type, event.data)
    started = next(e for e in seen if isinstance(e, hooks.TurnStartedEvent))
    assert started.data["turn"] == 1 and started.type == "turn.started"
    result = next(e for e in seen if isinstance(e, hooks.ActionResultEvent))
    assert (result.data["tool_name"], result.data["status"]) == ("get_weather", "output")
    failed = next(e for e in seen if e.type == "turn.failed")
    assert isinstance(failed, hooks.FailureEvent) and failed.data["error"]


def test_an_event_of_another_name_stays_a_plain_lifecycle_event() -> None:
    event = hooks.lifecycle_event("custom.thing", {"x": 1})
    assert type(event) is hs.LifecycleEvent and event.data == {"x": 1}
