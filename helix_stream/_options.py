"""The options of a run, in one place: what ``stream_text``, ``generate_text``, an ``Agent`` and
``Executor.run`` all take.

A run option is given as a keyword (``stream_text(stop_when=...)``,
``executor.run(agent, sid, "hi", stop_when=...)``) or as a field of an ``Agent`` (an ``Agent``
is a :class:`LoopOptions` with fields of its own besides). For one of an agent's turns, an
option the run gives (not ``None``) wins over the agent's; litellm params merge by key, the
run's over the agent's ``settings``. The loop reads the options from its
:class:`~helix_stream.loop._config.LoopConfig`, which
:func:`~helix_stream.loop._setup.loop_config` builds from them once per run.

A new option is a field here (type, default, a line in the docstring), its keyword on
``stream_text`` (a typed public signature; ``tests/loop/test_options.py`` fails until it is
there), and its plumbing into the loop: a :class:`~helix_stream.loop._config.LoopConfig`
field set in :func:`~helix_stream.loop._setup.loop_config`, read where the loop needs it.
``Agent``, ``Executor.run``, ``generate_text`` and the misplaced-keyword check
(:mod:`helix_stream.models._params`) take it from here.

This module imports nothing of the package at run time, so that every layer may read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .models._retry import DEFAULT_MAX_RETRIES

if TYPE_CHECKING:
    from ._timeout import Timeout
    from ._transform import StreamTransform
    from .auth import TokenStore
    from .middleware import ModelMiddleware
    from .models._cache import PromptCache
    from .prepare_step import PrepareStep
    from .steps import StopCondition
    from .telemetry import TelemetrySettings

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "OPTION_NAMES",
    "LoopOptions",
    "options_over",
    "split_options",
    "timeout_over",
]


Callback = Callable[..., Any]


# Not frozen: an Agent, a definition its user may still adjust, inherits these fields. The
# package never changes an instance; it makes new ones (options_over).
@dataclass(slots=True, kw_only=True)
class LoopOptions:
    """The options of one run (see the module docstring).

    Attributes:
        tools_context: Per-tool contexts by tool name; a tool with a ``context_schema`` gets
            only its own entry, validated before any model call.
        runtime_context: Shared state for the loop, ``prepare_step`` and callbacks; never sent
            to the model or to a tool.
        prepare_step: A step middleware or a list of them (a chain).
        stop_when: A stop condition or a list (any stops), besides an agent's ``max_steps``;
            for ``stream_text`` without one, ``step_count_is(20)``.
        telemetry: OpenTelemetry settings (off when ``None``).
        middleware: Model middleware around every call.
        router: A ``litellm.Router``; the model names one of its model groups, and each model
            call goes through ``router.acompletion`` (fallbacks, load balancing, cooldowns).
        max_retries: Retries of a model call that fails before its first chunk (429, 5xx,
            timeout, lost connection), with exponential backoff and jitter, honouring
            ``Retry-After``; never after a chunk was emitted. litellm's, the Router's and the
            OpenAI client's own retries are switched off. Default 2.
        prompt_cache: ``"auto"``: cache breakpoints where the provider needs them; ``False``:
            none.
        token_store: Where the tokens of tools with ``auth=`` are kept between calls
            (default: one in-memory store per process).
        timeout: Time limits: seconds (the total) or a ``Timeout`` (``total``, ``step``,
            ``first_chunk``, ``chunk``, ``tool``, ``tools``; README, "Timeouts"). A run's
            limits go over an agent's, limit by limit.
        transform: Stream transforms (the AI SDK's ``experimental_transform``): an async
            generator function over the chunk stream, or a list of them applied in order,
            after the loop and before every consumer (``hs.smooth_stream()``).
        on_chunk, on_step_finish, on_finish, on_error: Callbacks, sync or async.
        on_start, on_step_start, on_model_call_start, on_model_call_end, on_tool_call_start,
            on_tool_call_end, on_step_end, on_end, on_abort: Lifecycle callbacks, sync or
            async, each given one event (:mod:`helix_stream.loop._lifecycle`; a callback that
            raises is logged and never breaks the run).
        settings: litellm params for every model call (``**litellm_params`` of
            ``stream_text`` and ``Executor.run``; an Agent's ``settings``).
    """

    tools_context: Mapping[str, Any] | None = None
    runtime_context: Mapping[str, Any] | None = None
    prepare_step: PrepareStep | Sequence[PrepareStep] | None = None
    stop_when: StopCondition | Sequence[StopCondition] | None = None
    telemetry: TelemetrySettings | None = None
    middleware: Sequence[ModelMiddleware] | None = ()
    router: Any = None
    max_retries: int = DEFAULT_MAX_RETRIES
    prompt_cache: PromptCache = "auto"
    token_store: TokenStore | None = None
    timeout: float | Timeout | None = None
    transform: StreamTransform | Sequence[StreamTransform] | None = None
    on_chunk: Callback | None = None
    on_step_finish: Callback | None = None
    on_finish: Callback | None = None
    on_error: Callback | None = None
    on_start: Callback | None = None
    on_step_start: Callback | None = None
    on_model_call_start: Callback | None = None
    on_model_call_end: Callback | None = None
    on_tool_call_start: Callback | None = None
    on_tool_call_end: Callback | None = None
    on_step_end: Callback | None = None
    on_end: Callback | None = None
    on_abort: Callback | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)


# The options a caller names as keywords (``settings`` is what is left: the litellm params).
OPTION_NAMES: frozenset[str] = frozenset(f.name for f in fields(LoopOptions)) - {"settings"}


def split_options(keywords: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run options among ``keywords``, and the rest (litellm params)."""
    options = {k: v for k, v in keywords.items() if k in OPTION_NAMES}
    rest = {k: v for k, v in keywords.items() if k not in OPTION_NAMES}
    return options, rest


def options_over(
    base: LoopOptions, given: Mapping[str, Any], settings: Mapping[str, Any]
) -> LoopOptions:
    """``base``'s options (an agent's) with a run's over them: each option ``given`` that is
    not ``None`` wins; ``settings`` (the run's litellm params) merge over ``base.settings``."""
    own = {f.name: getattr(base, f.name) for f in fields(LoopOptions)}  # an Agent's own left out
    own.update({name: value for name, value in given.items() if value is not None})
    own["settings"] = {**base.settings, **settings}
    own["timeout"] = timeout_over(given.get("timeout"), base.timeout)
    return LoopOptions(**own)


def timeout_over(given: Any, base: Any) -> Any:
    """``timeout=`` given over ``base``'s, limit by limit (``None`` on either side: the
    other)."""
    if given is None or base is None:
        return base if given is None else given
    from ._timeout import as_timeout

    merged_given, merged_base = as_timeout(given), as_timeout(base)
    assert merged_given is not None
    return merged_given.over(merged_base)
