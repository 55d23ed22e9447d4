"""``define_hook``: observe-only subscribers to a session's lifecycle events.

Events: ``session.started``, ``turn.started``, ``turn.completed``, ``turn.failed``,
``step.started``, ``step.completed``, ``step.failed``, ``message.completed``,
``action.result``, ``context.committed``, ``context.skipped``, ``session.waiting``,
``session.failed``, ``session.completed``, and ``*`` for all of them.

Handlers run after the event is durably recorded (the store write it reports has committed),
awaited one at a time: for each hook (in the agent's order), its typed handlers first, then its
``*`` handler. Return values are ignored.

**Failure policy.** A handler that raises fails the *turn*: the run stops with a ``turn.failed``
event and an error chunk, and the session stays usable — the next ``run()`` works (a raising
``turn.started`` hook never ends the session). A handler subscribed to a failure event
(``turn.failed``, ``step.failed``, ``session.failed``) that raises escalates to
``session.failed``; errors of ``session.failed`` handlers are logged and go no further.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import HookError, InvalidRequestError
from .state import SessionInfo

__all__ = [
    "EVENTS",
    "FAILURE_EVENTS",
    "Hook",
    "HookContext",
    "LifecycleEvent",
    "define_hook",
    "dispatch",
]


EVENTS = frozenset(
    {
        "session.started",
        "turn.started",
        "turn.completed",
        "turn.failed",
        "step.started",
        "step.completed",
        "step.failed",
        "message.completed",
        "action.result",
        "context.committed",
        "context.skipped",
        "session.waiting",
        "session.failed",
        "session.completed",
    }
)
FAILURE_EVENTS = frozenset({"turn.failed", "step.failed", "session.failed"})

Handler = Callable[["LifecycleEvent", "HookContext"], Awaitable[Any] | Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class LifecycleEvent:
    """One lifecycle event: ``type`` (e.g. ``"turn.started"``) and its ``data``."""

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class HookContext:
    """What a handler receives besides the event.

    Attributes:
        session: The session the event belongs to.
    """

    session: SessionInfo
    _add: Callable[[Sequence[Any], int], Awaitable[int]] | None = None
    _position: int = 0

    async def add_context(self, items: Sequence[Any]) -> int:
        """Queue context items (source ``app`` unless they name another) for the next model
        call; re-running the same handler for the same event queues nothing twice."""
        position = self._position
        self._position += 1
        assert self._add is not None
        return await self._add(items, position)


@dataclass(frozen=True, slots=True)
class Hook:
    """A set of handlers made by :func:`define_hook`."""

    handlers: Mapping[str, Handler]

    def for_event(self, event: str) -> list[Handler]:
        out = [self.handlers[event]] if event in self.handlers else []
        if "*" in self.handlers:
            out.append(self.handlers["*"])
        return out


def define_hook(events: Mapping[str, Handler]) -> Hook:
    """Subscribe handlers to lifecycle events; give the result to ``Agent(hooks=[...])``.

    Example::

        audit = hs.define_hook(events={
            "session.started": lambda event, ctx: print("started", ctx.session.id),
            "*": record_everything,
        })

    Raises:
        InvalidRequestError: an unknown event name (the message lists the known ones).
    """
    unknown = sorted(set(events) - EVENTS - {"*"})
    if unknown:
        raise InvalidRequestError(
            f"unknown hook event(s) {unknown}; known: {sorted(EVENTS)} and '*'"
        )
    for name, handler in events.items():
        if not callable(handler):
            raise InvalidRequestError(f"the handler for {name!r} is not callable")
    return Hook(dict(events))


async def dispatch(
    hooks: Sequence[Hook], event: LifecycleEvent, make_context: Callable[[int], HookContext]
) -> None:
    """Run the handlers for ``event``, one at a time; raise HookError on the first failure."""
    index = 0
    for hook in hooks:
        for handler in hook.for_event(event.type):
            ctx = make_context(index)
            index += 1
            try:
                out = handler(event, ctx)
                if inspect.isawaitable(out):
                    await out
            except Exception as exc:
                raise HookError(event.type, exc) from exc
