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

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast, get_args

from ._event_stream import SessionEventKind
from .errors import FrameworkNotSupportedError, HookError, InvalidRequestError
from .state import SessionInfo

if TYPE_CHECKING:
    from .sandbox import Sandbox, SkillHandle
    from .steps import ToolResult

logger = logging.getLogger("helix_stream.hooks")

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


# The session's durable events (their one list: the kinds of the stream's SessionEvent).
EVENTS: frozenset[str] = frozenset(get_args(SessionEventKind))
FAILURE_EVENTS = frozenset({"turn.failed", "step.failed", "session.failed"})
# The events of one step (the others are the turn's or the session's).
STEP_EVENTS = frozenset(
    {"step.started", "step.completed", "step.failed", "message.completed", "action.result"}
    | {"context.committed", "context.skipped"}
)

Handler = Callable[["LifecycleEvent", "HookContext"], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class LifecycleEvent:
    """One lifecycle event: ``type`` (e.g. ``"turn.started"``) and its ``data``.

    A handler receives the event's own class (:class:`TurnStartedEvent`,
    :class:`ActionResultEvent`, ...), whose ``type`` is the event's name and whose ``data`` is a
    ``TypedDict`` of what that event carries; a ``*`` handler can narrow with ``isinstance``.

    Example::

        from helix_stream.hooks import ActionResultEvent

        def on_event(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
            if isinstance(event, ActionResultEvent):
                print(event.data["tool_name"], event.data["status"])
    """

    type: str
    data: Mapping[str, Any] = field(default_factory=dict)


# What each event carries (README, "Durable sessions", its **Hooks**). ``data`` stays a plain
# dict at run time (handlers that read ``event.data[...]`` keep working); the TypedDicts give
# a type checker its keys.
class SessionStartedData(TypedDict):
    agent: str


class TurnStartedData(TypedDict):
    turn: int


class StepStartedData(TypedDict):
    step: int


class StepCompletedData(TypedDict):
    step: int
    finish_reason: str | None


class TurnCompletedData(TypedDict):
    finish_reason: str | None


class MessageCompletedData(TypedDict):
    step: int
    text: str
    message: dict[str, Any] | None


class ActionResultData(TypedDict):
    tool_call_id: str
    tool_name: str
    status: str
    output: Any
    error: str | None
    result: ToolResult


class ContextCommittedData(TypedDict):
    count: int
    kinds: list[str]
    sources: list[str]


class ContextSkippedData(TypedDict):
    reason: str
    source: str


class _WaitingRequired(TypedDict):
    pending: list[str]


class SessionWaitingData(_WaitingRequired, total=False):
    wait: Literal["authorization"]
    strategy: str
    url: str | None
    authorizations: list[dict[str, Any]]


class SessionCompletedData(TypedDict):
    output: Any


class FailureData(TypedDict):
    error: str
    code: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStartedEvent(LifecycleEvent):
    """``session.started``: the session's first turn opened it (``data["agent"]``).

    Example::

        from helix_stream.hooks import HookContext, SessionStartedEvent

        def handler(event: SessionStartedEvent, ctx: HookContext) -> None:
            print("new session", ctx.session.id, "for", event.data["agent"])

        hook = hs.define_hook(events={"session.started": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["session.started"] = "session.started"
    data: SessionStartedData


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStartedEvent(LifecycleEvent):
    """``turn.started``: ``data["turn"]`` is the turn's sequence.

    Example::

        from helix_stream.hooks import HookContext, TurnStartedEvent

        def handler(event: TurnStartedEvent, ctx: HookContext) -> None:
            print("turn", event.data["turn"], "of", ctx.session.id)

        hook = hs.define_hook(events={"turn.started": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["turn.started"] = "turn.started"
    data: TurnStartedData


@dataclass(frozen=True, slots=True, kw_only=True)
class StepStartedEvent(LifecycleEvent):
    """``step.started``: ``data["step"]`` is the step's number.

    Example::

        from helix_stream.hooks import HookContext, StepStartedEvent

        def handler(event: StepStartedEvent, ctx: HookContext) -> None:
            print("step", event.data["step"])

        hook = hs.define_hook(events={"step.started": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["step.started"] = "step.started"
    data: StepStartedData


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCompletedEvent(LifecycleEvent):
    """``step.completed``: the step's number and finish reason.

    Example::

        from helix_stream.hooks import HookContext, StepCompletedEvent

        def handler(event: StepCompletedEvent, ctx: HookContext) -> None:
            print("step", event.data["step"], "ended:", event.data["finish_reason"])

        hook = hs.define_hook(events={"step.completed": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["step.completed"] = "step.completed"
    data: StepCompletedData


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnCompletedEvent(LifecycleEvent):
    """``turn.completed``: the last step's finish reason.

    Example::

        from helix_stream.hooks import HookContext, TurnCompletedEvent

        def handler(event: TurnCompletedEvent, ctx: HookContext) -> None:
            print("turn over:", event.data["finish_reason"])

        hook = hs.define_hook(events={"turn.completed": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["turn.completed"] = "turn.completed"
    data: TurnCompletedData


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageCompletedEvent(LifecycleEvent):
    """``message.completed``: the step, its text and the model's message as stored.

    Example::

        from helix_stream.hooks import HookContext, MessageCompletedEvent

        def handler(event: MessageCompletedEvent, ctx: HookContext) -> None:
            print(event.data["text"])              # the assistant's text of that step

        hook = hs.define_hook(events={"message.completed": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["message.completed"] = "message.completed"
    data: MessageCompletedData


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionResultEvent(LifecycleEvent):
    """``action.result``: a tool call ended (``data["result"]`` is the ``hs.ToolResult``).

    Example::

        from helix_stream.hooks import HookContext, ActionResultEvent

        def handler(event: ActionResultEvent, ctx: HookContext) -> None:
            print(event.data["tool_name"], event.data["status"], event.data["output"])

        hook = hs.define_hook(events={"action.result": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["action.result"] = "action.result"
    data: ActionResultData


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextCommittedEvent(LifecycleEvent):
    """``context.committed``: how many rows a step committed, their kinds and sources.

    Example::

        from helix_stream.hooks import HookContext, ContextCommittedEvent

        def handler(event: ContextCommittedEvent, ctx: HookContext) -> None:
            print(event.data["count"], "rows:", event.data["kinds"], event.data["sources"])

        hook = hs.define_hook(events={"context.committed": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["context.committed"] = "context.committed"
    data: ContextCommittedData


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSkippedEvent(LifecycleEvent):
    """``context.skipped``: a context row was left out (``reason``, ``source``).

    Example::

        from helix_stream.hooks import HookContext, ContextSkippedEvent

        def handler(event: ContextSkippedEvent, ctx: HookContext) -> None:
            print("skipped from", event.data["source"], ":", event.data["reason"])

        hook = hs.define_hook(events={"context.skipped": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["context.skipped"] = "context.skipped"
    data: ContextSkippedData


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionWaitingEvent(LifecycleEvent):
    """``session.waiting``: the calls the turn waits on (and a sign-in's strategy and URL).

    Example::

        from helix_stream.hooks import HookContext, SessionWaitingEvent

        def handler(event: SessionWaitingEvent, ctx: HookContext) -> None:
            if event.data.get("wait") == "authorization":
                print("sign in at", event.data.get("url"))
            print("waiting on", event.data["pending"])

        hook = hs.define_hook(events={"session.waiting": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["session.waiting"] = "session.waiting"
    data: SessionWaitingData


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionCompletedEvent(LifecycleEvent):
    """``session.completed``: the agent's finish tool gave its ``output``.

    Example::

        from helix_stream.hooks import HookContext, SessionCompletedEvent

        def handler(event: SessionCompletedEvent, ctx: HookContext) -> None:
            print("answer:", event.data["output"])

        hook = hs.define_hook(events={"session.completed": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["session.completed"] = "session.completed"
    data: SessionCompletedData


@dataclass(frozen=True, slots=True, kw_only=True)
class FailureEvent(LifecycleEvent):
    """``turn.failed``, ``step.failed`` or ``session.failed``: the error's class name and
    ``code``.

    Example::

        from helix_stream.hooks import HookContext, FailureEvent

        def handler(event: FailureEvent, ctx: HookContext) -> None:
            print(event.type, event.data["code"], event.data["error"])

        hook = hs.define_hook(events={"turn.failed": handler})
        agent = hs.Agent(name="support", model="helix/demo", hooks=[hook])
    """

    type: Literal["turn.failed", "step.failed", "session.failed"]
    data: FailureData


_EVENT_CLASSES: dict[str, type[LifecycleEvent]] = {
    "session.started": SessionStartedEvent,
    "turn.started": TurnStartedEvent,
    "step.started": StepStartedEvent,
    "step.completed": StepCompletedEvent,
    "turn.completed": TurnCompletedEvent,
    "message.completed": MessageCompletedEvent,
    "action.result": ActionResultEvent,
    "context.committed": ContextCommittedEvent,
    "context.skipped": ContextSkippedEvent,
    "session.waiting": SessionWaitingEvent,
    "session.completed": SessionCompletedEvent,
    **dict.fromkeys(FAILURE_EVENTS, FailureEvent),
}


def lifecycle_event(type: str, data: Mapping[str, Any] | None = None) -> LifecycleEvent:
    """The event ``type`` as its own class (``data`` as given: a dict at run time).

    Example::

        from helix_stream.hooks import ActionResultEvent, lifecycle_event

        event = lifecycle_event("turn.started", {"turn": 1})   # its own class: a hook's test
        assert event.type == "turn.started" and not isinstance(event, ActionResultEvent)
    """
    cls = _EVENT_CLASSES.get(type, LifecycleEvent)
    return cls(type=type, data=dict(data or {}))


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentInfo:
    """The agent a hook runs for: ``name``; ``node_id`` names its node where the agent runs
    as one node of a graph of agents (``None`` here: an agent runs on its own).

    Example::

        from helix_stream.hooks import HookContext, LifecycleEvent

        def handler(event: LifecycleEvent, ctx: HookContext) -> None:
            print(ctx.agent.name)                      # the agent running the session

        hook = hs.define_hook(events={"*": handler})
    """

    name: str
    node_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelInfo:
    """Where the turn came in: ``kind`` is ``"http"`` (the chat server), ``"python"``
    (``Executor.run`` called by your code) or ``"subagent"`` (a sub-agent's turn, run by its
    parent's tool call). ``continuation_token`` resumes the turn's stream where the channel
    has one to give (``None`` where it does not apply).

    Example::

        from helix_stream.hooks import HookContext, LifecycleEvent

        def handler(event: LifecycleEvent, ctx: HookContext) -> None:
            print(ctx.channel.kind)                    # "http", "python" or "subagent"

        hook = hs.define_hook(events={"*": handler})
    """

    kind: str
    continuation_token: str | None = None


@dataclass(slots=True, kw_only=True)
class HookContext:
    """What a handler receives besides the event (and what ``Agent(sandbox_on_session=...)``
    receives).

    Attributes:
        session: The session the event belongs to.
        agent: The agent (``agent.name``).
        channel: Where the turn came in (``channel.kind``).

    Example::

        from helix_stream.hooks import HookContext, TurnStartedEvent

        async def remind(event: TurnStartedEvent, ctx: HookContext) -> None:
            if event.data["turn"] == 1:
                await ctx.add_context([hs.instruction("Greet the user by name.")])   # a row

        hook = hs.define_hook(events={"turn.started": remind})
    """

    session: SessionInfo
    agent: AgentInfo
    channel: ChannelInfo
    _add: Callable[[Sequence[Any], int], Awaitable[int]] | None = None
    _sandbox: Callable[[], Awaitable[Sandbox]] | None = None
    _skill: Callable[[str], SkillHandle] | None = None
    _position: int = 0

    async def add_context(self, items: Sequence[Any]) -> int:
        """Queue context items (source ``app`` unless they name another) for the next model
        call; re-running the same handler for the same event queues nothing twice.

        Raises:
            FrameworkNotSupportedError: here context cannot be queued (``sandbox_on_session``).
        """
        position = self._position
        self._position += 1
        if self._add is None:
            raise FrameworkNotSupportedError(
                "ctx.add_context is for lifecycle hooks and tools; sandbox_on_session only "
                "prepares the sandbox (queue context from a hook or a tool instead)."
            )
        return await self._add(items, position)

    async def get_sandbox(self) -> Sandbox:
        """The agent's sandbox in this session, made at the first call (see
        ``ToolContext.get_sandbox``).

        Raises:
            FrameworkNotSupportedError: the agent has no sandbox (``Agent(sandbox=...)``).
            NoActiveContextError: called after the handler's event was handled.
        """
        if self._sandbox is None:
            raise FrameworkNotSupportedError("ctx.get_sandbox needs a session run (Executor.run)")
        return await self._sandbox()

    def get_skill(self, name: str) -> SkillHandle:
        """A handle on the agent's skill ``name`` (see ``ToolContext.get_skill``)."""
        if self._skill is None:
            raise FrameworkNotSupportedError("ctx.get_skill needs a session run (Executor.run)")
        return self._skill(name)


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
