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

from .._event_stream import Subscriber
from ..auth._cache import DEFAULT_AUTH, AuthSettings
from ..middleware import ModelMiddleware, WrappedModel
from ..models._cache import PromptCache
from ..models._retry import RetryPolicy
from ..prepare_step import PrepareStep
from ..steps import StopCondition
from ..telemetry import Recorder
from ..tools import Tool
from ._env import PLAIN, TurnEnv
from ._timeout import Timeout
from ._transform import StreamTransform

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
        env: The turn environment its session hands the run (``loop/_env.py``).
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
    env: TurnEnv = PLAIN
    prompt_cache: PromptCache = "auto"
    auth: AuthSettings = DEFAULT_AUTH
    timeout: Timeout | None = None
    transform: tuple[StreamTransform, ...] = ()
    subscribers: tuple[Subscriber, ...] = ()  # the session's, on the run's event stream


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
