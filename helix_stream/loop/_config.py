"""What one run of the loop is given: a frozen :class:`LoopConfig` and a :class:`SessionLink`.

The loop knows nothing of stores or sessions. An executor session takes part in a run through
the small :class:`SessionLink` protocol, which the loop calls at fixed points:

* ``preamble(tools)`` once after ``start``: work a paused turn left (answered approvals, client tool
  outputs), as chunks; then ``paused()`` before each step: whether that work left the turn
  paused again (a call that waits for a sign-in), so that no model call is made;
* ``before_step(n)`` before each model call: commit the context, return the new messages
  (rows, the user's message) for the loop to append to its own list, and their chunks;
* ``before_retry(n)`` before a retried attempt of that call (the first failed before its
  first chunk): the same for the context that came meanwhile (the context pass runs before
  every model call);
* ``gate(call)`` and ``tool_context(...)`` for each tool call; ``token_settings(given)`` for
  how the step's calls resolve tokens, and ``park(park)`` when a call waits for the user to
  sign in (the session keeps the sign-in and gives its URL; the call's turn pauses after
  the step);
* ``after_step(step, final=...)`` once a step is done: persist it (the run's ``step-ended``
  event then reports it to the subscribers, the session's hooks among them);
* ``end(how)`` once, when the run is over (:class:`RunEnd`: finished, failed or cut short,
  and the text of a step it left unfinished): the session ends its turn.

A plain ``stream_text`` call uses :data:`NO_SESSION`, whose methods do nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from .._event_stream import Subscriber
from ..auth._cache import DEFAULT_AUTH, AuthSettings
from ..auth._flow import ParkForSignIn
from ..chunks import Chunk, ToolAuthorizationRequest
from ..middleware import ModelMiddleware, WrappedModel
from ..models._cache import PromptCache
from ..models._retry import RetryPolicy
from ..prepare_step import PrepareStep
from ..steps import StepResult, StopCondition, ToolCall
from ..telemetry import Recorder
from ..tools import Tool, ToolContext
from ._lifecycle import ToolWatch
from ._timeout import NO_CLOCK, RunClock, Timeout
from ._transform import StreamTransform

__all__ = [
    "NO_SESSION",
    "Callbacks",
    "GateReason",
    "LoopConfig",
    "RunEnd",
    "SessionLink",
    "StepCommit",
    "call_user",
]

GateReason = Literal["tool_inactive"]
Callback = Callable[..., Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCommit:
    """What a session committed before a model call (its context pass: not to be confused
    with the step_context hook, one of the sources the pass reads).

    Attributes:
        messages: Messages committed for this call (the user's message, settled tool
            results, context rows), as the model sees them; the loop appends them.
        chunks: Chunks to emit for them (``context-row``, ``context_skipped``).
    """

    messages: Sequence[dict[str, Any]] = ()
    chunks: Sequence[Chunk] = ()


_EMPTY = StepCommit()


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnd:
    """How a run ended, as the loop tells its session (``SessionLink.end``).

    Attributes:
        error: The run's error (what its ``error`` chunk carried), or ``None``.
        finished: The run produced its ``finish`` chunk.
        unfinished_text: The text the step in progress had streamed when the run failed or
            was cut short (``""`` between steps): what the user saw of that step.
    """

    error: BaseException | None = None
    finished: bool = False
    unfinished_text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRun:
    """How a run's tool calls run: its limits (``timeout=``) and its tool callbacks."""

    clock: RunClock = NO_CLOCK
    watch: ToolWatch | None = None


class SessionLink(Protocol):
    """How a session takes part in a run (see the module docstring)."""

    def bind(self) -> AbstractContextManager[None]:
        """Bind the session scope around code the loop runs for the user."""
        ...

    def preamble(self, tools: ToolRun) -> AsyncGenerator[Chunk, None]:
        """Chunks of the work a paused turn left, before the first step; the calls it runs
        (approved, signed in) run under ``tools``' limits and callbacks, as a step's do."""
        ...

    async def paused(self) -> bool:
        """Whether the turn paused again before its first step (the preamble left a call
        waiting): the loop then ends without a model call."""
        ...

    async def before_step(self, step_number: int) -> StepCommit:
        """Commit the context for the model call about to be made."""
        ...

    async def before_retry(self, step_number: int) -> StepCommit:
        """Commit the context for a retried attempt of step ``step_number``'s model call."""
        ...

    async def gate(self, call: ToolCall) -> GateReason | None:
        """Why ``call`` must not run (its tool is switched off), or ``None``."""
        ...

    def tool_context(
        self, call: ToolCall, tool: Tool, context: Any, write: Callable[[Chunk], None]
    ) -> ToolContext:
        """The ``ctx`` a tool receives; ``write`` puts a chunk into the stream."""
        ...

    def token_settings(self, given: AuthSettings) -> AuthSettings:
        """How the tool calls of a step resolve tokens (``given``: the run's own settings)."""
        ...

    async def park(self, park: ParkForSignIn) -> ToolAuthorizationRequest:
        """Keep a sign-in for a call that waits for it; the chunk that shows its URL.

        Only called when :meth:`token_settings` said the run ``parks``."""
        ...

    async def after_step(self, step: StepResult, *, final: bool) -> None:
        """Persist and report a finished step; ``final``: the loop stops after it."""
        ...

    async def end(self, how: RunEnd) -> None:
        """The run is over (called once, last, however it ended; it must not raise)."""
        ...


class _NoSession:
    """The session of a plain ``stream_text`` call: nothing to bind, commit or persist."""

    def bind(self) -> AbstractContextManager[None]:
        return nullcontext()

    async def preamble(self, tools: ToolRun) -> AsyncGenerator[Chunk, None]:
        return
        yield  # an empty async generator

    async def paused(self) -> bool:
        return False

    async def before_step(self, step_number: int) -> StepCommit:
        return _EMPTY

    async def before_retry(self, step_number: int) -> StepCommit:
        return _EMPTY

    async def gate(self, call: ToolCall) -> GateReason | None:
        return None

    def tool_context(
        self, call: ToolCall, tool: Tool, context: Any, write: Callable[[Chunk], None]
    ) -> ToolContext:
        return ToolContext(context=context, tool_call_id=call.id, tool_name=tool.name, _write=write)

    def token_settings(self, given: AuthSettings) -> AuthSettings:
        return given

    async def park(self, park: ParkForSignIn) -> ToolAuthorizationRequest:
        # token_settings never says parks here: nothing can wait for a sign-in.
        raise RuntimeError("a plain stream_text call cannot park a call for a sign-in")

    async def after_step(self, step: StepResult, *, final: bool) -> None:
        return None

    async def end(self, how: RunEnd) -> None:
        return None


NO_SESSION: SessionLink = _NoSession()


@dataclass(frozen=True, slots=True, kw_only=True)
class Callbacks:
    """The user's callbacks, sync or async (each runs inside the session binding)."""

    on_chunk: Callback | None = None
    on_step_finish: tuple[Callback, ...] = ()
    on_finish: Callback | None = None
    on_error: Callback | None = None
    lifecycle: Mapping[str, Callback] = field(default_factory=dict)  # on_start, ... by name


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopConfig:
    """Everything one run needs, fixed before it starts.

    Attributes:
        contexts: Each tool's validated context (resolved before the run, so that a missing
            one fails before any model call).
        messages: The conversation before the first step (a session's log, rendered).
        message_id: The id the ``start`` chunk announces.
        finish_tool: The tool whose successful call ends the run (forced completion).
        router: A ``litellm.Router``; model calls go through ``router.acompletion``.
        retry: The retry policy of each model call (before its first chunk).
        output: The pydantic model of a structured answer: ``finish.output`` is an instance.
        output_mode: How it is asked for: ``"auto"`` decides per run (the provider's JSON
            schema where litellm reports support, the finish tool otherwise); ``"tool"``
            always uses the finish tool (an ``Agent``).
        where: Where the litellm params came from (for the message of a refused one).
        prompt_cache: ``"auto"`` to add cache breakpoints where the provider needs them,
            ``False`` for none (a ``prepare_step`` override wins for its step).
        auth: How tools with ``auth=`` resolve their tokens (the token store; a session
            also gives the principal's ``identify``).
        timeout: The run's time limits (README, "Timeouts").
        transform: The stream transforms, in order (:mod:`._transform`).
        subscribers: More subscribers of the run's event stream (a session's hooks).
    """

    model: str | WrappedModel
    system: str | None
    messages: tuple[dict[str, Any], ...]
    tools: Mapping[str, Tool]
    tools_context: Mapping[str, Any]
    contexts: Mapping[str, Any]
    runtime_context: Mapping[str, Any]
    recorder: Recorder
    prepare_step: tuple[PrepareStep, ...] = ()
    stop_when: tuple[StopCondition, ...] = ()
    middleware: tuple[ModelMiddleware, ...] = ()
    litellm_params: Mapping[str, Any] = field(default_factory=dict)
    message_id: str | None = None
    session_id: str | None = None
    finish_tool: str | None = None
    router: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    output: type[BaseModel] | None = None
    output_mode: Literal["auto", "tool"] = "tool"
    where: str = "stream_text"
    callbacks: Callbacks = field(default_factory=Callbacks)
    session: SessionLink = NO_SESSION
    prompt_cache: PromptCache = "auto"
    auth: AuthSettings = DEFAULT_AUTH
    timeout: Timeout | None = None
    transform: tuple[StreamTransform, ...] = ()
    subscribers: tuple[Subscriber, ...] = ()  # the session's, on the run's event stream


async def call_user(fn: Callback | None, *args: Any, session: SessionLink = NO_SESSION) -> Any:
    """Call a user function (sync or async) inside the session binding; return its result."""
    if fn is None:
        return None
    with session.bind():
        out = fn(*args)
        if inspect.isawaitable(out):
            out = await out
    return out
