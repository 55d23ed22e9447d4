"""The lifecycle events: their names, the class of each event and the ``TypedDict`` of the data
it carries, and :func:`lifecycle_event`, which makes an event of its own class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, get_args

from .._event_stream import SessionEventKind

if TYPE_CHECKING:
    from ..steps import ToolResult


# The session's durable events (their one list: the kinds of the stream's SessionEvent).
EVENTS: frozenset[str] = frozenset(get_args(SessionEventKind))
FAILURE_EVENTS = frozenset({"turn.failed", "step.failed", "session.failed"})
# The events of one step (the others are the turn's or the session's).
STEP_EVENTS = frozenset(
    {"step.started", "step.completed", "step.failed", "message.completed", "action.result"}
    | {"context.committed", "context.skipped"}
)


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
    wait: Literal["authorization", "outcome"]
    strategy: str
    url: str | None
    authorizations: list[dict[str, Any]]
    calls: list[dict[str, Any]]


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
