"""A run's time limits (:class:`Timeout`) and the one timer per model call that enforces them.

A run has one clock (:class:`RunClock`, the ``total`` limit). Each model call has one
:class:`StreamTimer`: a single event-loop timer for the whole call, not a task or a timer per
chunk. The stream's reader marks when it starts waiting (:meth:`StreamTimer.waiting_from`)
and when it stops; the timer, when it comes due, compares the time since the wait began with
the limit of the stage the call is in (``first_chunk`` until the first content-bearing chunk,
``chunk`` after it, ``step`` and ``total`` throughout) and either re-arms itself for the new
deadline or cancels the waiting task, which the reader turns into a
:class:`~helix_stream.errors.ModelTimeoutError` naming the limit. A chunk thus costs one
clock read and two attribute writes; the timer runs once per limit's length at most.

It never cancels the task while the reader is not waiting on the stream: time the consumer
spends between chunks (a slow socket, a callback) is not the provider's silence.

Tool limits (``tool``, ``tools``) are applied where tools run (:mod:`._tools`), one
``asyncio.timeout`` per tool execution.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .errors import InvalidRequestError, ModelTimeoutError

__all__ = [
    "NO_CLOCK",
    "RunClock",
    "StreamTimer",
    "Timeout",
    "as_timeout",
    "describe_seconds",
    "timeout_error",
]

_STAGES = ("total", "step", "first_chunk", "chunk", "tool")


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeout:
    """Time limits of a run, in seconds; ``None``: no limit (README, "Timeouts").

    Attributes:
        total: The whole call, all steps.
        step: Each model call, retries included.
        first_chunk: Until the first content-bearing chunk of each model call attempt (text,
            reasoning, tool-input deltas, tool calls; headers, empty deltas and role-only
            chunks do not count). A call that times out here is retried under ``max_retries``.
        chunk: The longest silence between content-bearing chunks once output has started
            (a stall). Never retried: the text already streamed would be repeated.
        tool: Each tool execution; the tool is cancelled and the model gets an error result.
        tools: Per-tool overrides of ``tool``, by tool name (``{"slow_api": 30.0}``).

    Raises:
        InvalidRequestError: a limit that is not a positive number.

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Hi",
                                timeout=hs.Timeout(total=120, first_chunk=30, chunk=15, tool=20,
                                                   tools={"slow_report": 90}))
    """

    total: float | None = None
    step: float | None = None
    first_chunk: float | None = None
    chunk: float | None = None
    tool: float | None = None
    tools: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in _STAGES:
            _check(name, getattr(self, name))
        if not isinstance(self.tools, Mapping):
            raise InvalidRequestError("Timeout(tools=) takes a {tool name: seconds} dict.")
        for tool_name, seconds in self.tools.items():
            _check(f"tools[{tool_name!r}]", seconds)
        object.__setattr__(self, "tools", dict(self.tools))

    def over(self, base: Timeout | None) -> Timeout:
        """These limits over ``base``'s: each limit set here wins, the others are
        ``base``'s; ``tools`` merge by name."""
        if base is None:
            return self
        own = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "tools"}
        merged = {k: v if v is not None else getattr(base, k) for k, v in own.items()}
        return Timeout(**merged, tools={**base.tools, **self.tools})

    def for_tool(self, name: str) -> float | None:
        """The limit of one execution of tool ``name``."""
        return self.tools.get(name, self.tool)

    def for_step(self, override: Any) -> Timeout:
        """These limits with a ``prepare_step`` override's (a number is ``step``)."""
        if override is None:
            return self
        given = as_timeout(override)
        assert given is not None
        return replace(
            self,
            step=given.step if given.step is not None else self.step,
            first_chunk=given.first_chunk if given.first_chunk is not None else self.first_chunk,
            chunk=given.chunk if given.chunk is not None else self.chunk,
        )


def _check(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidRequestError(
            f"Timeout {name} must be a positive number of seconds or None, not {value!r}."
        )
    if math.isnan(value):
        raise InvalidRequestError(f"Timeout {name} must not be NaN.")


def as_timeout(value: Any) -> Timeout | None:
    """``timeout=``'s value as a :class:`Timeout`: a number is the ``total``.

    Raises:
        InvalidRequestError: neither a number, a ``Timeout`` nor ``None``.
    """
    if value is None or isinstance(value, Timeout):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Timeout(total=value)
    raise InvalidRequestError(
        f"timeout= takes seconds (the total) or hs.Timeout(...), not {type(value).__name__}."
    )


def describe_seconds(seconds: float) -> str:
    """``30`` as ``"30 s"``, ``0.5`` as ``"0.5 s"``."""
    return f"{seconds:g} s"


def timeout_error(limit: str, seconds: float) -> ModelTimeoutError:
    """The error of a ``timeout=`` limit that fired."""
    what = {
        "total": "the run took longer than its total limit",
        "step": "the model call took longer than its step limit",
        "first_chunk": "the model sent nothing in time (first_chunk limit)",
        "chunk": "the model's stream stalled (chunk limit)",
    }[limit]
    return ModelTimeoutError(
        f"Timed out: {what} of {describe_seconds(seconds)}. "
        'Set timeout= to change it (README, "Timeouts").',
        limit=limit,
        after=seconds,
    )


class RunClock:
    """The run's limits and its ``total`` deadline (event-loop time), fixed when the run
    starts."""

    __slots__ = ("deadline", "limits", "total")

    def __init__(self, limits: Timeout | None) -> None:
        self.limits = limits or Timeout()
        self.total = self.limits.total
        self.deadline = math.inf
        if self.total is not None:
            self.deadline = asyncio.get_running_loop().time() + self.total

    def check(self) -> None:
        """Raise the ``total`` limit's error if it has passed."""
        if self.total is not None and asyncio.get_running_loop().time() >= self.deadline:
            raise timeout_error("total", self.total)

    def for_tool(self, name: str) -> tuple[float | None, float | None]:
        """One execution of tool ``name``: ``(seconds it may take, its own limit)``; the
        first is shorter than the second when the total ends sooner (``None``: no limit)."""
        own = self.limits.for_tool(name)
        if self.total is None:
            return own, own
        left = max(0.0, self.deadline - asyncio.get_running_loop().time())
        return (left if own is None else min(own, left)), own


class StreamTimer:
    """The one timer of one model call (see the module docstring).

    The reader calls :meth:`waiting_from` before it awaits the stream (with the time it
    starts waiting) and :meth:`stop_waiting` after; :meth:`content` once output has started.
    A cancellation the reader receives while waiting goes to :meth:`timed_out`.
    """

    __slots__ = (
        "_clock",
        "_handle",
        "_limits",
        "_loop",
        "_step_deadline",
        "_task",
        "fired",
        "since",
        "started",
        "waiting",
    )

    def __init__(self, limits: Timeout, clock: RunClock) -> None:
        self._limits = limits
        self._clock = clock
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        step = limits.step
        self._step_deadline = math.inf if step is None else self._loop.time() + step
        self._handle: asyncio.TimerHandle | None = None
        self.fired: ModelTimeoutError | None = None
        self.since = self._loop.time()
        self.started = False  # a content-bearing chunk came
        self.waiting = False

    @property
    def active(self) -> bool:
        """Any limit applies to this call."""
        limits = self._limits
        return not (
            limits.step is None
            and limits.first_chunk is None
            and limits.chunk is None
            and self._clock.total is None
        )

    def _due(self) -> tuple[float, str, float]:
        """The earliest deadline now, the limit it belongs to and that limit's seconds."""
        limits = self._limits
        gap = limits.chunk if self.started else limits.first_chunk
        best = (math.inf, "", 0.0)
        if gap is not None:
            best = (self.since + gap, "chunk" if self.started else "first_chunk", gap)
        if self._step_deadline < best[0]:
            best = (self._step_deadline, "step", limits.step or 0.0)
        if self._clock.deadline < best[0]:
            best = (self._clock.deadline, "total", self._clock.total or 0.0)
        return best

    def arm(self) -> None:
        """Start the timer (once, before the first request); fail at once if a deadline the
        call inherits (``total``, ``step`` across retries) has already passed."""
        when, limit, seconds = self._due()
        if when <= self._loop.time():
            raise timeout_error(limit, seconds)
        if when < math.inf and self._handle is None:
            self._handle = self._loop.call_at(when, self._check)

    def attempt(self) -> None:
        """A new attempt of the call (a retry): the first chunk's wait starts again."""
        self.started = False
        self.since = self._loop.time()
        self.fired = None
        self.arm()

    def content(self, now: float) -> None:
        """Output has started, at ``now`` (loop time): from here the ``chunk`` limit applies,
        and the reader sets :attr:`since` after each content-bearing chunk it handed on."""
        self.started = True
        self.since = now
        if self._handle is not None:  # the first_chunk deadline may be later than this one
            self._handle.cancel()
            self._handle = None
        when = self._due()[0]
        if when < math.inf:
            self._handle = self._loop.call_at(when, self._check)

    def _check(self) -> None:
        self._handle = None
        when, limit, seconds = self._due()
        now = self._loop.time()
        if when > now:
            self._handle = self._loop.call_at(when, self._check)
            return
        if not self.waiting or self._task is None or self._task.done():
            # The consumer has the task: look again once it is back on the stream.
            self._handle = self._loop.call_at(now + max(seconds, 0.01), self._check)
            return
        self.fired = timeout_error(limit, seconds)
        self._task.cancel()

    def timed_out(self, exc: BaseException) -> ModelTimeoutError | None:
        """This timer's error if ``exc`` is its own cancellation (the task is uncancelled);
        ``None`` for any other exception, the consumer's cancellation included."""
        fired = self.fired
        if fired is None or not isinstance(exc, asyncio.CancelledError):
            return None
        self.fired = None
        task = self._task
        if task is not None and task.uncancel() > 0:
            return None  # cancelled from outside too: that wins
        return fired

    def close(self) -> None:
        """Stop the timer (the call is over)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


NO_CLOCK = RunClock(None)
"""The clock of a run without limits."""
