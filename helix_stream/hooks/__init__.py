"""``define_hook``: observe-only subscribers to a session's lifecycle events.

Events: ``session.started``, ``turn.started``, ``turn.completed``, ``turn.failed``,
``step.started``, ``step.completed``, ``step.failed``, ``message.completed``,
``action.result``, ``context.committed``, ``context.skipped``, ``session.waiting``,
``session.failed``, ``session.completed``, and ``*`` for all of them.

Handlers run after the event is durably recorded (the store write it reports has committed),
awaited one at a time: first the typed handler of every hook that has one (in the agent's
order), then the ``*`` handler of every hook that has one (in the agent's order again) — the
order of the session model's hook registry. Return values are ignored.

**Context.** Unlike the session model's observe-only hooks, a handler may queue context with
``ctx.add_context`` (README, "Differences from the AI SDK"); a handler re-run for the same
event of the same turn (a retried or recovered turn) records nothing twice.

**Failure policy.** A handler that raises never keeps the event from the later handlers (a
``*`` audit hook sees it too); once they have all run, it fails the *turn*: the run stops
with a ``turn.failed`` event and an error chunk, and the session stays usable — the next
``run()`` works (a raising ``turn.started`` hook never ends the session). A handler
subscribed to a failure event (``turn.failed``, ``step.failed``, ``session.failed``) that
raises escalates to ``session.failed``; errors of ``session.failed`` handlers are logged and
go no further.
"""

from __future__ import annotations

from .._public_home import claim_classes

# ``X as X``: names the module held before it became a package, importable from here still
# (not in __all__).
from ._context import AgentInfo, ChannelInfo, HookContext
from ._define import Handler as Handler, Hook, HookHandlers, define_hook, dispatch
from ._events import (
    EVENTS,
    FAILURE_EVENTS,
    STEP_EVENTS,
    ActionResultData as ActionResultData,
    ActionResultEvent,
    ContextCommittedData as ContextCommittedData,
    ContextCommittedEvent,
    ContextSkippedData as ContextSkippedData,
    ContextSkippedEvent,
    FailureData as FailureData,
    FailureEvent,
    LifecycleEvent,
    MessageCompletedData as MessageCompletedData,
    MessageCompletedEvent,
    SessionCompletedData as SessionCompletedData,
    SessionCompletedEvent,
    SessionStartedData as SessionStartedData,
    SessionStartedEvent,
    SessionWaitingData as SessionWaitingData,
    SessionWaitingEvent,
    StepCompletedData as StepCompletedData,
    StepCompletedEvent,
    StepStartedData as StepStartedData,
    StepStartedEvent,
    TurnCompletedData as TurnCompletedData,
    TurnCompletedEvent,
    TurnStartedData as TurnStartedData,
    TurnStartedEvent,
    lifecycle_event,
)

__all__ = [
    "EVENTS",
    "FAILURE_EVENTS",
    "STEP_EVENTS",
    "ActionResultEvent",
    "AgentInfo",
    "ChannelInfo",
    "ContextCommittedEvent",
    "ContextSkippedEvent",
    "FailureEvent",
    "Hook",
    "HookContext",
    "HookHandlers",
    "LifecycleEvent",
    "MessageCompletedEvent",
    "SessionCompletedEvent",
    "SessionStartedEvent",
    "SessionWaitingEvent",
    "StepCompletedEvent",
    "StepStartedEvent",
    "TurnCompletedEvent",
    "TurnStartedEvent",
    "define_hook",
    "dispatch",
    "lifecycle_event",
]

claim_classes(globals())  # their module is this package, not the private one (_public_home.py)
