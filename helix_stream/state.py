"""Durable per-session state (``define_state``) and the session context (``current_session``).

Both resolve against the *active session scope*, a :mod:`contextvars` binding that the executor
sets only while it runs your code for a session — tools, hooks, the step_context hook, the
memory recall, tools' description functions, prepare_step, stop conditions, callbacks and
``sandbox_on_session`` — and never as a global, so two sessions running concurrently in
one process never see each other's state. Outside a run they raise
:class:`~helix_stream.errors.NoActiveContextError`.

State values must be JSON-safe. They are saved in the checkpoint at every step boundary and
restored on the next turn, on resume and retry (to the checkpoint's snapshot) and in a new
process; they are not reset between turns, and a sub-agent never shares its parent's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from .errors import InvalidRequestError, NoActiveContextError

__all__ = [
    "AuthInfo",
    "ChildRun",
    "ParentInfo",
    "RunChild",
    "SessionInfo",
    "SessionScope",
    "StateHandle",
    "SubAgent",
    "TurnInfo",
    "bind_scope",
    "current_scope",
    "current_session",
    "define_state",
]

T = TypeVar("T")
RESERVED_PREFIX = "helix."


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnInfo:
    """The turn being run: ``id`` (its UI message id) and ``sequence`` (1 for the first).

    Example::

        @hs.tool(description="Who is asking, in which turn.")
        def whoami() -> str:
            info = hs.current_session()               # a SessionInfo, inside a session's tool
            return f"turn {info.turn.sequence} ({info.turn.id}) of {info.id}"
    """

    id: str
    sequence: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthInfo:
    """Who is acting: ``current`` (this request's caller) and ``initiator`` (who started the
    session). Both ``None`` on an unprotected agent; set from the server's ``authenticate``.

    Example::

        @hs.tool(description="Who is asking, in which turn.")
        def whoami() -> str:
            info = hs.current_session()               # a SessionInfo, inside a session's tool
            return f"asked by {info.auth.current}, started by {info.auth.initiator}"
    """

    current: Any = None
    initiator: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ParentInfo:
    """For a sub-agent's session: the tool call that started it and its parent session.

    Example::

        @hs.tool(description="Who is asking, in which turn.")
        def whoami() -> str:
            info = hs.current_session()               # a SessionInfo, inside a session's tool
            if info.parent is not None:              # a sub-agent run by a parent's tool call
                return f"sub-agent of {info.parent.session_id} (call {info.parent.call_id})"
            return "top-level session"
    """

    call_id: str
    session_id: str
    root_session_id: str
    turn: TurnInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """The session a piece of your code runs in (``hs.current_session()``, ``ctx.session``).

    Example::

        @hs.tool(description="Who is asking, in which turn.")
        def whoami() -> str:
            info = hs.current_session()               # a SessionInfo, inside a session's tool
            return f"session {info.id}, turn {info.turn.sequence}"
    """

    id: str
    turn: TurnInfo
    auth: AuthInfo = field(default_factory=AuthInfo)
    parent: ParentInfo | None = None


class SubAgent(Protocol):
    """The agent a sub-agent's turn runs (an :class:`~helix_stream.Agent`; this module sits
    below it, docs/architecture.md "The layers").

    Example::

        researcher = hs.Agent(name="researcher", model="helix/demo")
        child: SubAgent = researcher                # an Agent is what a sub-agent's turn runs
        assert child.name == "researcher"
    """

    @property
    def name(self) -> str:
        """The agent's name."""
        ...


class ChildRun(Protocol):
    """What a sub-agent's turn gives its caller (a
    :class:`~helix_stream.StreamTextResult`).

    Example::

        async def summarize(run: ChildRun) -> str:
            text = await run.text()                   # the sub-agent's answer, once its turn ended
            return text[:200]
    """

    async def text(self) -> str:
        """The turn's text, once it ended."""
        ...

    @property
    def output(self) -> Any:
        """The structured answer, or ``None``."""
        ...


class RunChild(Protocol):
    """Runs a sub-agent's turn in a child session (what ``Agent.as_tool`` calls): ``agent`` in
    session ``session_id`` with the user message ``prompt``, for the caller ``auth``, started by
    the tool call ``parent``.

    Example::

        async def run_researcher(run_child: RunChild, parent: ParentInfo) -> str:
            researcher = hs.Agent(name="researcher", model="helix/demo")
            run = run_child(researcher, f"{parent.session_id}/research", "Find three sources",
                            auth=None, parent=parent)
            return await run.text()
    """

    def __call__(
        self, agent: SubAgent, session_id: str, prompt: str, *, auth: Any, parent: ParentInfo
    ) -> ChildRun: ...


@dataclass(slots=True)
class SessionScope:
    """What is bound while the executor runs code for one session: the session's info, how a
    sub-agent of it runs, and its define_state values.

    Example::

        @hs.tool(description="The turn this call runs in.")
        def turn_number() -> int:
            return current_scope("turn_number").info.turn.sequence
    """

    info: SessionInfo
    run_child: RunChild
    state: dict[str, Any] = field(default_factory=dict)


_SCOPE: ContextVar[SessionScope | None] = ContextVar("helix_stream_session", default=None)


@contextmanager
def bind_scope(scope: SessionScope | None) -> Iterator[None]:
    """Bind ``scope`` for the code run inside (and the tasks it creates).

    Example::

        scope = SessionScope(info=session, run_child=run_child)
        with bind_scope(scope):
            assert hs.current_session() is session        # code in here runs "in" the session
    """
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def current_scope(what: str = "this") -> SessionScope:
    """The running session's scope (its state, turn and auth), for code the executor runs.

    Args:
        what: How the caller is named in the error when no session runs.

    Raises:
        NoActiveContextError: called outside a session's tool, hook or step.

    Example::

        scope = current_scope("my_helper")   # inside a tool of a running session
    """
    scope = _SCOPE.get()
    if scope is None:
        raise NoActiveContextError(
            f"No active helix_stream session: {what} can only be used in code the executor runs "
            "for a session (tools, hooks, step_context, memory, tool descriptions, "
            "prepare_step, stop conditions, callbacks, sandbox_on_session)."
        )
    return scope


def current_session() -> SessionInfo:
    """The session the calling code runs in: ``id``, ``turn``, ``auth``, ``parent``.

    Raises:
        NoActiveContextError: called outside a session run.

    Example::

        @hs.tool(description="Who is asking, in which turn.")
        def whoami() -> str:
            info = hs.current_session()               # a SessionInfo, inside a session's tool
            return info.id
    """
    return current_scope("current_session()").info


def check_json(name: str, value: Any) -> None:
    """Refuse a state value that JSON cannot carry, naming the slot."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(f"state {name!r}: the value must be JSON-safe ({exc})") from None


class StateHandle(Generic[T]):
    """A durable per-session slot (see :func:`define_state`).

    Example::

        visits: StateHandle[int] = hs.define_state("myapp.visits", lambda: 0)

        @hs.tool(description="Count this session's visits.")
        def count_visit() -> int:
            return visits.update(lambda n: n + 1)    # stored with the session, JSON-safe
    """

    def __init__(self, name: str, initial: Callable[[], T]) -> None:
        self.name = name
        self.initial = initial

    def get(self) -> T:
        """The current value (``initial()`` on first access in a session); a copy."""
        state = current_scope(f"state {self.name!r}").state
        if self.name not in state:
            value = self.initial()
            check_json(self.name, value)
            state[self.name] = value
        return copy.deepcopy(state[self.name])  # type: ignore[no-any-return]

    def update(self, fn: Callable[[T], T]) -> T:
        """Replace the value with ``fn(current)``; return the new value."""
        value = fn(self.get())
        check_json(self.name, value)
        current_scope(f"state {self.name!r}").state[self.name] = copy.deepcopy(value)
        return value


def define_state(name: str, initial: Callable[[], T]) -> StateHandle[T]:
    """Declare a durable per-session state slot (at module scope, so importers share it).

    Example::

        budget = hs.define_state("myapp.budget", lambda: {"count": 0, "cap": 25})

        @hs.tool
        def query(sql: str) -> str:
            if budget.get()["count"] >= 25:
                raise RuntimeError("Query budget exhausted.")
            budget.update(lambda b: {**b, "count": b["count"] + 1})
            return f"ran {sql}"

    Args:
        name: A stable identifier, namespaced to your app; ``helix.`` is reserved.
        initial: Makes the starting value on first access in a session.

    Raises:
        InvalidRequestError: the name is empty or starts with ``helix.``.
    """
    if not name or name.startswith(RESERVED_PREFIX):
        raise InvalidRequestError(
            f"state name {name!r} is invalid: names starting with {RESERVED_PREFIX!r} are reserved"
        )
    return StateHandle(name, initial)
