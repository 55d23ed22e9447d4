"""The options of a run, in one place: what ``stream_text``, ``generate_text``, an ``Agent`` and
``Executor.run`` all take.

A run option is given as a keyword (``stream_text(stop_when=...)``,
``executor.run(agent, sid, "hi", stop_when=...)``) or as a field of an ``Agent`` (an ``Agent``
is a :class:`LoopOptions` with fields of its own besides). For one of an agent's turns, an
option the run gives (not ``None``) wins over the agent's; litellm params merge by key, the
run's over the agent's ``settings``. The loop reads the options from its
:class:`~helix_stream.loop._config.LoopConfig`, which
:func:`~helix_stream.loop._setup.loop_config` builds from them once per run.

The options are declared here once: :class:`LoopOptions` (type, default and a line of its
docstring per option). Everything else takes them from it: an ``Agent`` is a
:class:`LoopOptions`; the loop's config holds one (``LoopConfig.options``); the keywords of
``stream_text``, ``generate_text`` and ``Executor.run`` are :class:`RunOptions`, the same
fields in the form PEP 692's ``**options: Unpack[...]`` needs (mypy reads keywords only from a
class body, so the names are spelled there too, and ``tests/loop/test_options.py`` fails when
the two differ by a name or a type); the "Args" of those functions' docstrings are rendered
from :class:`LoopOptions`' own (:func:`documents_options`); the strict keyword check
(:mod:`helix_stream.loop._params`) knows them by :data:`OPTION_NAMES`. A new option is a
field of both classes and a line of the docstring, and its use where the loop reads
``config.options``.

This module imports nothing of the package at run time, so that every layer may read it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from .._result_size import DEFAULT_MAX_TOOL_RESULT_BYTES
from ..models._retry import DEFAULT_MAX_RETRIES

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .._timeout import Timeout
    from .._transform import StreamTransform
    from ..auth import TokenStore
    from ..chunks import Chunk
    from ..middleware import ModelMiddleware
    from ..models._cache import PromptCache
    from ..prepare_step import PrepareStep
    from ..steps import StepResult, StopCondition
    from ..telemetry import TelemetrySettings
    from ._lifecycle import (
        AbortEvent,
        EndEvent,
        ModelCallEndEvent,
        ModelCallStartEvent,
        StartEvent,
        StepEndEvent,
        StepStartEvent,
        ToolCallEndEvent,
        ToolCallStartEvent,
    )
    from ._result import GenerateTextResult

__all__ = [
    "DEFAULT_MAX_RETRIES",
    "OPTION_NAMES",
    "LoopOptions",
    "ModelParams",
    "RunKeywords",
    "RunOptions",
    "documents_options",
    "options_over",
    "split_options",
    "timeout_over",
]


# A callback receives one value and may return anything (an awaitable is awaited): sync or
# async, ``Callable[[Event], object]`` takes both.
OnStepFinish = Callable[["StepResult"], object]


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
        max_tool_result_bytes: The most bytes of a tool's result the model reads (its
            tool message as rendered): a larger result is cut, with a notice saying how much
            was cut, and the app still gets all of it (``ToolResult.output``, the
            ``action.result`` hook); a tool's own ``max_result_bytes`` wins. ``None`` on an
            agent or ``stream_text``: no limit. Default 100,000.
        transform: Stream transforms (the AI SDK's ``experimental_transform``): an async
            generator function over the chunk stream, or a list of them applied in order,
            after the loop and before every consumer (``hs.smooth_stream()``).
        provider_options: Provider-specific fields of the request body, merged into it as
            litellm's ``extra_body`` does (the AI SDK's ``providerOptions``). A keyword that
            is neither a run option nor a litellm parameter is refused, never sent.
        on_chunk: ``fn(chunk)`` for every chunk, before any consumer.
        on_step_finish: ``fn(step)`` (a ``StepResult``) after each step, or a list of them.
        on_finish: ``fn(result)`` (a ``GenerateTextResult``) when the run finished.
        on_error: ``fn(error)`` when the run failed.
        on_start: ``fn(StartEvent)``: the run starts.
        on_step_start: ``fn(StepStartEvent)``: a step starts.
        on_model_call_start: ``fn(ModelCallStartEvent)``: a model call is about to be sent.
        on_model_call_end: ``fn(ModelCallEndEvent)``: a model call ended.
        on_tool_call_start: ``fn(ToolCallStartEvent)``: a tool call starts.
        on_tool_call_end: ``fn(ToolCallEndEvent)``: a tool call ended.
        on_step_end: ``fn(StepEndEvent)``: a step ended.
        on_end: ``fn(EndEvent)``: the run finished.
        on_abort: ``fn(AbortEvent)``: the run was closed or cancelled before its end.
        settings: litellm params for every model call (an Agent's ``settings``; the litellm
            keywords of ``stream_text`` and ``Executor.run``).

    Callbacks are sync or async. A lifecycle callback (``on_start`` ... ``on_abort``) that
    raises is logged and never breaks the run (:mod:`helix_stream.loop._lifecycle`).
    """

    tools_context: Mapping[str, Any] | None = None
    runtime_context: Mapping[str, Any] | None = None
    prepare_step: PrepareStep | Sequence[PrepareStep] | None = None
    stop_when: StopCondition | Sequence[StopCondition] | None = None
    telemetry: TelemetrySettings | None = None
    middleware: Sequence[ModelMiddleware] | None = ()
    router: Any = None  # a litellm.Router: typed Any so that the types never import litellm
    max_retries: int = DEFAULT_MAX_RETRIES
    prompt_cache: PromptCache = "auto"
    token_store: TokenStore | None = None
    timeout: float | Timeout | None = None
    max_tool_result_bytes: int | None = DEFAULT_MAX_TOOL_RESULT_BYTES
    transform: StreamTransform | Sequence[StreamTransform] | None = None
    provider_options: Mapping[str, Any] | None = None
    on_chunk: Callable[[Chunk], object] | None = None
    on_step_finish: OnStepFinish | Sequence[OnStepFinish] | None = None
    on_finish: Callable[[GenerateTextResult[Any]], object] | None = None
    on_error: Callable[[BaseException], object] | None = None
    on_start: Callable[[StartEvent], object] | None = None
    on_step_start: Callable[[StepStartEvent], object] | None = None
    on_model_call_start: Callable[[ModelCallStartEvent], object] | None = None
    on_model_call_end: Callable[[ModelCallEndEvent], object] | None = None
    on_tool_call_start: Callable[[ToolCallStartEvent], object] | None = None
    on_tool_call_end: Callable[[ToolCallEndEvent], object] | None = None
    on_step_end: Callable[[StepEndEvent], object] | None = None
    on_end: Callable[[EndEvent], object] | None = None
    on_abort: Callable[[AbortEvent], object] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)


class RunOptions(TypedDict, total=False):
    """:class:`LoopOptions`' options as keywords (PEP 692): ``stream_text(**options)``.

    The same names and types as :class:`LoopOptions` (``settings`` aside: as keywords, the
    litellm params are keywords of their own); ``tests/loop/test_options.py`` checks it.
    """

    tools_context: Mapping[str, Any] | None
    runtime_context: Mapping[str, Any] | None
    prepare_step: PrepareStep | Sequence[PrepareStep] | None
    stop_when: StopCondition | Sequence[StopCondition] | None
    telemetry: TelemetrySettings | None
    middleware: Sequence[ModelMiddleware] | None
    router: Any
    max_retries: int
    prompt_cache: PromptCache
    token_store: TokenStore | None
    timeout: float | Timeout | None
    max_tool_result_bytes: int | None
    transform: StreamTransform | Sequence[StreamTransform] | None
    provider_options: Mapping[str, Any] | None
    on_chunk: Callable[[Chunk], object] | None
    on_step_finish: OnStepFinish | Sequence[OnStepFinish] | None
    on_finish: Callable[[GenerateTextResult[Any]], object] | None
    on_error: Callable[[BaseException], object] | None
    on_start: Callable[[StartEvent], object] | None
    on_step_start: Callable[[StepStartEvent], object] | None
    on_model_call_start: Callable[[ModelCallStartEvent], object] | None
    on_model_call_end: Callable[[ModelCallEndEvent], object] | None
    on_tool_call_start: Callable[[ToolCallStartEvent], object] | None
    on_tool_call_end: Callable[[ToolCallEndEvent], object] | None
    on_step_end: Callable[[StepEndEvent], object] | None
    on_end: Callable[[EndEvent], object] | None
    on_abort: Callable[[AbortEvent], object] | None


class ModelParams(TypedDict, total=False):
    """The litellm parameters, as typed keywords of ``stream_text``, ``generate_text`` and
    ``Executor.run``: the OpenAI chat parameters and ``litellm.completion``'s own keywords
    (the ones the loop builds itself, ``model``, ``messages``, ``tools``, ``stream``, aside,
    and ``timeout``/``max_retries``, which are run options), with litellm's call parameters
    most used. ``tests/loop/test_options.py`` checks the list against litellm's own lists;
    at run time every parameter litellm lists (:mod:`helix_stream.models._params`) is taken,
    and an Agent's ``settings`` takes them all.
    """

    temperature: float | None
    top_p: float | None
    n: int | None
    stop: str | Sequence[str] | None
    max_tokens: int | None
    max_completion_tokens: int | None
    modalities: Sequence[str] | None
    prediction: Mapping[str, object] | None
    audio: Mapping[str, object] | None
    presence_penalty: float | None
    frequency_penalty: float | None
    logit_bias: Mapping[str, float] | None
    user: str | None
    request_timeout: float | None
    api_base: str | None
    api_version: str | None
    api_key: str | None
    deployment_id: str | None
    organization: str | None
    base_url: str | None
    default_headers: Mapping[str, str] | None
    response_format: Mapping[str, object] | type[BaseModel] | None
    seed: int | None
    tool_choice: str | Mapping[str, object] | None
    parallel_tool_calls: bool | None
    logprobs: bool | None
    top_logprobs: int | None
    reasoning_effort: str | None
    extra_headers: Mapping[str, str] | None
    thinking: Mapping[str, object] | None
    web_search_options: Mapping[str, object] | None
    include_server_side_tool_invocations: bool | None
    service_tier: str | None
    prompt_cache_key: str | None
    prompt_cache_retention: str | None
    safety_identifier: str | None
    verbosity: str | None
    store: bool | None
    enable_json_schema_validation: bool | None
    functions: Sequence[Mapping[str, object]] | None
    function_call: str | Mapping[str, object] | None
    # litellm's call parameters (litellm.types.utils.all_litellm_params) most used:
    custom_llm_provider: str | None
    fallbacks: Sequence[object] | None
    metadata: Mapping[str, object] | None
    mock_response: object
    headers: Mapping[str, str] | None
    stream_timeout: float | None
    litellm_call_id: str | None
    litellm_session_id: str | None
    litellm_trace_id: str | None
    tags: Sequence[str] | None
    caching: bool | None
    merge_reasoning_content_in_choices: bool | None


class RunKeywords(RunOptions, ModelParams, total=False):
    """Every keyword of a run: the run options and the litellm parameters."""


# The options a caller names as keywords (``settings`` is what is left: the litellm params).
OPTION_NAMES: frozenset[str] = frozenset(f.name for f in fields(LoopOptions)) - {"settings"}

_ATTRIBUTE = re.compile(r"^        (\w+(?:, \w+)*):")
_Fn = TypeVar("_Fn", bound=Callable[..., Any])
_MARKER = re.compile(r"^( *)\{run options\}$", re.MULTILINE)


def option_docs() -> dict[str, str]:
    """Each option's entry in :class:`LoopOptions`' docstring ("Attributes"), by name: its
    lines, without the indentation of the docstring."""
    doc = LoopOptions.__doc__ or ""
    section = doc.split("Attributes:\n", 1)[1].split("\n\n", 1)[0]
    entries: dict[str, list[str]] = {}
    current: list[str] = []
    for line in section.splitlines():
        match = _ATTRIBUTE.match(line)
        if match:
            current = [line[8:]]
            for name in match.group(1).split(", "):
                entries[name] = current
        elif line.strip():
            current.append(line[8:])
    return {name: "\n".join(lines) for name, lines in entries.items() if name != "settings"}


def documents_options(fn: _Fn) -> _Fn:
    """Write every run option into ``fn``'s "Args" where its docstring has the line
    ``{run options}`` (indented as an entry): the options are described once
    (:class:`LoopOptions`), and each front door lists all of them."""
    if fn.__doc__:
        fn.__doc__ = _MARKER.sub(lambda m: _rendered(m.group(1)), fn.__doc__)
    return fn


def _rendered(indent: str) -> str:
    entries = dict.fromkeys(option_docs().values())
    return "\n".join(indent + line for entry in entries for line in entry.splitlines())


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
    from .._timeout import as_timeout

    merged_given, merged_base = as_timeout(given), as_timeout(base)
    assert merged_given is not None
    return merged_given.over(merged_base)
