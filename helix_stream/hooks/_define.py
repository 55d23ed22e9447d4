"""Subscribing and running handlers: :func:`define_hook` (its typed :class:`HookHandlers`)
makes a :class:`Hook`; :func:`dispatch` runs an event's handlers in order, with the failure
policy."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict, cast

from ..errors import HookError, InvalidRequestError
from ._context import HookContext
from ._events import (
    EVENTS,
    ActionResultEvent,
    ContextCommittedEvent,
    ContextSkippedEvent,
    FailureEvent,
    LifecycleEvent,
    MessageCompletedEvent,
    SessionCompletedEvent,
    SessionStartedEvent,
    SessionWaitingEvent,
    StepCompletedEvent,
    StepStartedEvent,
    TurnCompletedEvent,
    TurnStartedEvent,
)

logger = logging.getLogger("helix_stream.hooks")

Handler = Callable[["LifecycleEvent", "HookContext"], object]


# ``define_hook(events={...})``'s keys and the event class each handler receives: a type
# checker gives a handler (a lambda too) its event's class from the key it is filed under.
HookHandlers = TypedDict(
    "HookHandlers",
    {
        "session.started": Callable[[SessionStartedEvent, HookContext], object],
        "turn.started": Callable[[TurnStartedEvent, HookContext], object],
        "turn.completed": Callable[[TurnCompletedEvent, HookContext], object],
        "turn.failed": Callable[[FailureEvent, HookContext], object],
        "step.started": Callable[[StepStartedEvent, HookContext], object],
        "step.completed": Callable[[StepCompletedEvent, HookContext], object],
        "step.failed": Callable[[FailureEvent, HookContext], object],
        "message.completed": Callable[[MessageCompletedEvent, HookContext], object],
        "action.result": Callable[[ActionResultEvent, HookContext], object],
        "context.committed": Callable[[ContextCommittedEvent, HookContext], object],
        "context.skipped": Callable[[ContextSkippedEvent, HookContext], object],
        "session.waiting": Callable[[SessionWaitingEvent, HookContext], object],
        "session.failed": Callable[[FailureEvent, HookContext], object],
        "session.completed": Callable[[SessionCompletedEvent, HookContext], object],
        "*": Callable[[LifecycleEvent, HookContext], object],
    },
    total=False,
)
HookHandlers.__doc__ = """The handlers :func:`define_hook` takes, each typed for its event.

Example:
    >>> async def audit(event: TurnStartedEvent, ctx: HookContext) -> None:
    ...     print(event.data["turn"])
    >>> handlers: HookHandlers = {"turn.started": audit}
    >>> hook = define_hook(events=handlers)
"""


@dataclass(frozen=True, slots=True)
class Hook:
    """A set of handlers made by :func:`define_hook`.

    Example::

        hook = hs.define_hook(events={"turn.started": lambda event, ctx: print(event.data["turn"])})
        assert "turn.started" in hook.handlers
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    handlers: Mapping[str, Handler]


def define_hook(events: HookHandlers) -> Hook:
    """Subscribe handlers to lifecycle events; give the result to ``Agent(hooks=[...])``.

    Each handler receives its event's own class (:class:`HookHandlers` maps the names to
    them): ``"action.result"``'s handler an :class:`ActionResultEvent`, whose ``data`` a type
    checker knows; ``"*"``'s a :class:`LifecycleEvent`. A dict built beforehand is typed
    ``HookHandlers`` (``from helix_stream.hooks import HookHandlers``).

    Example::

        audit = hs.define_hook(events={
            "session.started": lambda event, ctx: print("started", ctx.session.id),
            "*": lambda event, ctx: print(event.type),
        })

    Raises:
        InvalidRequestError: an unknown event name (the message lists the known ones).
    """
    # Each handler takes its own event class; dispatch gives it that class (lifecycle_event).
    handlers = cast(Mapping[str, Handler], events)
    unknown = sorted(set(handlers) - EVENTS - {"*"})
    if unknown:
        raise InvalidRequestError(
            f"unknown hook event(s) {unknown}; known: {sorted(EVENTS)} and '*'"
        )
    for name, handler in handlers.items():
        if not callable(handler):
            raise InvalidRequestError(f"the handler for {name!r} is not callable")
    return Hook(dict(handlers))


async def dispatch(
    hooks: Sequence[Hook], event: LifecycleEvent, make_context: Callable[[int], HookContext]
) -> None:
    """Run the handlers for ``event``, one at a time: every hook's typed handler, then every
    hook's ``*`` handler. A handler that raises never keeps the later ones from seeing the
    event; once all have run, the first failure is raised as :class:`HookError` (the others
    are logged). ``make_context(index)`` gets the handler's place in that order (which
    identifies its call site).

    Example::

        from helix_stream.hooks import AgentInfo, ChannelInfo, HookContext
        from helix_stream.hooks import dispatch, lifecycle_event

        seen: list[str] = []
        hook = hs.define_hook(events={"*": lambda event, ctx: seen.append(event.type)})
        context = HookContext(session=session, agent=AgentInfo(name="support"),
                              channel=ChannelInfo(kind="python"))
        await dispatch([hook], lifecycle_event("turn.started", {"turn": 1}), lambda index: context)
        assert seen == ["turn.started"]
    """
    typed = [hook.handlers[event.type] for hook in hooks if event.type in hook.handlers]
    wildcard = [hook.handlers["*"] for hook in hooks if "*" in hook.handlers]
    failure: HookError | None = None
    for index, handler in enumerate([*typed, *wildcard]):
        ctx = make_context(index)
        try:
            out = handler(event, ctx)
            if inspect.isawaitable(out):
                await out
        except Exception as exc:
            if failure is None:
                failure = HookError(event.type, exc)
                failure.__cause__ = exc
            else:
                logger.error("another %s handler raised too: %r", event.type, exc)
    if failure is not None:
        raise failure
