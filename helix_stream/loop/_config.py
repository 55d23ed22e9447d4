"""What one run of the loop is given: a frozen :class:`LoopConfig`, whose ``env`` is the turn
environment its session hands it (``loop/_env.py``; a plain ``stream_text`` call runs in
:data:`~._env.PLAIN`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from .._event_stream import EventStream
from .._timeout import Timeout, as_timeout
from .._transform import StreamTransform, as_transforms
from ..auth._cache import DEFAULT_AUTH, AuthSettings
from ..middleware import ModelMiddleware, WrappedModel
from ..models._cache import PromptCacheOption
from ..models._retry import RetryPolicy
from ..prepare_step import PrepareStep
from ..steps import StopCondition
from ..telemetry import Recorder
from ..tools import Tool
from ._env import PLAIN, TurnEnv
from ._lifecycle import LIFECYCLE_NAMES
from ._options import LoopOptions

__all__ = ["Callbacks", "LoopConfig", "call_user"]

Callback = Callable[..., Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Callbacks:
    """The user's callbacks, sync or async (each runs inside the session binding)."""

    on_chunk: Callback | None = None
    on_step_finish: tuple[Callback, ...] = ()
    on_finish: Callback | None = None
    on_error: Callback | None = None
    lifecycle: Mapping[str, Callback] = field(default_factory=dict)  # on_start, ... by name

    @classmethod
    def of(cls, options: LoopOptions) -> Callbacks:
        """The callbacks ``options`` name."""
        return cls(
            on_chunk=options.on_chunk,
            on_step_finish=as_tuple(options.on_step_finish),
            on_finish=options.on_finish,
            on_error=options.on_error,
            lifecycle={n: getattr(options, n) for n in LIFECYCLE_NAMES if getattr(options, n)},
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopConfig:
    """Everything one run needs, fixed before it starts: the run's options as they were
    given (``options``, checked by :func:`~helix_stream.loop._setup.setup_run`), and what
    only the run's setup and session know.

    The loop reads the options through the properties below (``prepare_step`` as a tuple,
    ``retry`` as a policy, ...), each made from ``options`` when asked: nothing is copied
    from the options field by field.

    Attributes:
        options: The run's options (an agent's with the run's over them).
        contexts: Each tool's validated context (resolved before the run, so that a missing
            one fails before any model call).
        messages: The conversation before the first step (a session's log, rendered).
        message_id: The id the ``start`` chunk announces.
        stop_when: The run's stop conditions: the caller's own (an agent's ``max_steps``) and
            the options' (default ``step_count_is(20)``).
        finish_tool: The tool whose successful call ends the run (forced completion).
        output: The pydantic model of a structured answer: ``finish.output`` is an instance.
        output_mode: How it is asked for: ``"auto"`` decides per run (the provider's JSON
            schema where litellm reports support, the finish tool otherwise); ``"tool"``
            always uses the finish tool (an ``Agent``).
        where: Where the litellm params came from (for the message of a refused one).
        env: The turn environment its session hands the run (``loop/_env.py``).
        events: The run's event stream, when its session made it (with the session's
            subscribers: its hooks); otherwise the run makes its own.
    """

    options: LoopOptions
    model: str | WrappedModel
    system: str | None
    messages: tuple[dict[str, Any], ...]
    tools: Mapping[str, Tool]
    tools_context: Mapping[str, Any]
    contexts: Mapping[str, Any]
    runtime_context: Mapping[str, Any]
    recorder: Recorder
    stop_when: tuple[StopCondition, ...] = ()
    message_id: str | None = None
    session_id: str | None = None
    finish_tool: str | None = None
    output: type[BaseModel] | None = None
    output_mode: Literal["auto", "tool"] = "tool"
    where: str = "stream_text"
    env: TurnEnv = PLAIN
    events: EventStream | None = None  # the session's turn's, which its own events share

    @property
    def prepare_step(self) -> tuple[PrepareStep, ...]:
        return as_tuple(self.options.prepare_step)

    @property
    def middleware(self) -> tuple[ModelMiddleware, ...]:
        return tuple(self.options.middleware or ())

    @property
    def litellm_params(self) -> Mapping[str, Any]:
        """The litellm params of every call: ``settings``, with ``provider_options`` merged
        into ``extra_body`` (what litellm merges into the provider's request body)."""
        settings, extra = self.options.settings, self.options.provider_options
        if not extra:
            return settings
        return {**settings, "extra_body": {**(settings.get("extra_body") or {}), **extra}}

    @property
    def router(self) -> Any:
        """A ``litellm.Router``; model calls go through ``router.acompletion``."""
        return self.options.router

    @property
    def retry(self) -> RetryPolicy:
        """The retry policy of each model call (before its first chunk)."""
        return RetryPolicy(max_retries=self.options.max_retries)

    @property
    def stream_retries(self) -> int:
        """Retries of a model call after text has streamed (``loop/_stream_retry.py``)."""
        return self.options.stream_retries or 0

    @property
    def callbacks(self) -> Callbacks:
        return Callbacks.of(self.options)

    @property
    def prompt_cache(self) -> PromptCacheOption:
        """``"auto"`` to add cache breakpoints where the provider needs them, ``False`` for
        none (a ``prepare_step`` override wins for its step)."""
        return self.options.prompt_cache

    @property
    def auth(self) -> AuthSettings:
        """How tools with ``auth=`` resolve their tokens (the token store; a session also
        gives the principal's ``identify``)."""
        if self.options.token_store is None:
            return DEFAULT_AUTH
        return AuthSettings(token_store=self.options.token_store)

    @property
    def timeout(self) -> Timeout | None:
        """The run's time limits (README, "Timeouts")."""
        return as_timeout(self.options.timeout)

    @property
    def transform(self) -> tuple[StreamTransform, ...]:
        """The stream transforms, in order (:mod:`helix_stream._transform`)."""
        return as_transforms(self.options.transform)


def as_tuple(value: Any) -> tuple[Any, ...]:
    """An option that is one value or a list of them, as a tuple (``None``: empty)."""
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)


async def call_user(
    fn: Callback | None,
    *args: Any,
    scope: Callable[[], AbstractContextManager[None]] = nullcontext,
) -> Any:
    """Call a user function (sync or async) inside the session binding; return its result."""
    if fn is None:
        return None
    with scope():
        out = fn(*args)
        if inspect.isawaitable(out):
            out = await out
    return out
