"""``stream_text`` and ``generate_text``: the one-shot loop, AI SDK style."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..auth._cache import DEFAULT_AUTH, AuthSettings
from ..auth._strategy import strategies_by_name
from ..errors import InvalidRequestError
from ..middleware import ModelMiddleware, WrappedModel
from ..models._cache import PromptCache, check_prompt_cache
from ..models._output import check_output_schema
from ..models._params import check_params
from ..models._retry import DEFAULT_MAX_RETRIES, RetryPolicy
from ..prepare_step import PrepareStep
from ..steps import StopCondition, step_count_is
from ..tools import FINISH_TOOL_NAME, Tool, finish_tool as make_finish_tool, tools_by_name
from ._config import Callbacks, LoopConfig
from ._result import GenerateTextResult, StreamTextResult
from ._run import resolve_contexts, run_loop

if TYPE_CHECKING:
    from ..auth import TokenStore
    from ..telemetry import TelemetrySettings

__all__ = ["DEFAULT_MAX_STEPS", "build_config", "generate_text", "stream_text"]

DEFAULT_MAX_STEPS = 20


def _as_tuple(value: Any) -> tuple[Any, ...]:
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return (value,)


def build_config(
    *,
    model: str | WrappedModel,
    system: str | None,
    messages: Sequence[Mapping[str, Any]] | None,
    prompt: str | None,
    tools: Sequence[Tool] | Mapping[str, Tool] | None,
    tools_context: Mapping[str, Any] | None,
    runtime_context: Mapping[str, Any] | None,
    prepare_step: PrepareStep | Sequence[PrepareStep] | None,
    stop_when: StopCondition | Sequence[StopCondition] | None,
    telemetry: TelemetrySettings | None,
    middleware: Sequence[ModelMiddleware] | None,
    callbacks: Mapping[str, Any],
    litellm_params: Mapping[str, Any],
    operation: str,
    agent_name: str | None = None,
    conversation_id: str | None = None,
    finish_tool: str | None = None,
    router: Any = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    output: type[BaseModel] | None = None,
    output_mode: Literal["auto", "tool"] = "auto",
    where: str | None = None,
    prompt_cache: PromptCache | None = "auto",
    token_store: TokenStore | None = None,
) -> LoopConfig:
    """Validate the arguments and build a run's config (shared with the executor, which
    completes it for its session with ``dataclasses.replace``).

    Refuses before any request: a misplaced or unsendable litellm param, a retry count that
    is not one, an ``output`` that is not a pydantic model (or given with ``response_format``),
    two different auth strategies of one name.
    """
    from ..telemetry import recorder_for

    where = where or f"{operation}()"
    check_params(litellm_params, where=where)
    tool_map = tools_by_name(tools)
    strategies_by_name(tool_map)  # one name, one strategy: tokens are kept by name
    if output is not None:
        output, tool_map = _with_output(output, tool_map, litellm_params)
        finish_tool = FINISH_TOOL_NAME
    tools_context = dict(tools_context or {})
    # Fails here, before any model call, naming the tool whose context is missing or invalid.
    contexts = resolve_contexts(tool_map, tools_context)
    prompted = [] if prompt is None else [{"role": "user", "content": prompt}]
    convo = (*(dict(m) for m in messages or ()), *prompted)
    runtime = dict(runtime_context or {})
    check_prompt_cache(prompt_cache := "auto" if prompt_cache is None else prompt_cache)
    recorder = recorder_for(
        telemetry,
        operation=operation,
        tools=tool_map,
        runtime_context=runtime,
        tools_context=tools_context,
        agent_name=agent_name,
        conversation_id=conversation_id,
    )
    return LoopConfig(
        model=model,
        system=system,
        messages=convo,
        tools=tool_map,
        tools_context=tools_context,
        contexts=contexts,
        runtime_context=runtime,
        prepare_step=_as_tuple(prepare_step),
        stop_when=_as_tuple(stop_when) or (step_count_is(DEFAULT_MAX_STEPS),),
        middleware=tuple(middleware or ()),
        litellm_params=dict(litellm_params),
        recorder=recorder,
        session_id=conversation_id,
        finish_tool=finish_tool,
        router=router,
        retry=RetryPolicy(max_retries=max_retries),
        output=output,
        output_mode=output_mode,
        where=where,
        prompt_cache=prompt_cache,
        callbacks=_callbacks(callbacks),
        auth=DEFAULT_AUTH if token_store is None else AuthSettings(token_store=token_store),
    )


def _callbacks(given: Mapping[str, Any]) -> Callbacks:
    return Callbacks(
        on_chunk=given.get("on_chunk"),
        on_step_finish=_as_tuple(given.get("on_step_finish")),
        on_finish=given.get("on_finish"),
        on_error=given.get("on_error"),
    )


def _with_output(
    output: type[BaseModel], tool_map: dict[str, Tool], litellm_params: Mapping[str, Any]
) -> tuple[type[BaseModel], dict[str, Tool]]:
    """The checked ``output`` model and the tools with its finish tool (unless the caller
    brought one of that name)."""
    output = check_output_schema(output)
    if "response_format" in litellm_params:
        raise InvalidRequestError(
            "output= and response_format= ask for the answer's shape twice: pass one "
            "(output= takes a pydantic model and returns an instance in result.output)."
        )
    if FINISH_TOOL_NAME in tool_map:
        return output, tool_map
    return output, {**tool_map, FINISH_TOOL_NAME: make_finish_tool(output)}


def stream_text(
    *,
    model: str | WrappedModel,
    messages: Sequence[Mapping[str, Any]] | None = None,
    prompt: str | None = None,
    system: str | None = None,
    tools: Sequence[Tool] | Mapping[str, Tool] | None = None,
    tools_context: Mapping[str, Any] | None = None,
    runtime_context: Mapping[str, Any] | None = None,
    prepare_step: PrepareStep | Sequence[PrepareStep] | None = None,
    stop_when: StopCondition | Sequence[StopCondition] | None = None,
    telemetry: TelemetrySettings | None = None,
    middleware: Sequence[ModelMiddleware] | None = None,
    router: Any = None,
    max_retries: int = DEFAULT_MAX_RETRIES,
    output: type[BaseModel] | None = None,
    prompt_cache: PromptCache = "auto",
    token_store: TokenStore | None = None,
    on_chunk: Callable[..., Any] | None = None,
    on_step_finish: Callable[..., Any] | None = None,
    on_finish: Callable[..., Any] | None = None,
    on_error: Callable[..., Any] | None = None,
    **litellm_params: Any,
) -> StreamTextResult:
    """Stream a multi-step, tool-calling generation through ``litellm.acompletion``.

    Example::

        result = hs.stream_text(model="openai/gpt-4o-mini", prompt="Hi", tools=[weather])
        async for chunk in result:
            ...
        print(await result.text())

    Args:
        model: Any litellm model string (``"helix/demo"`` is the embedded demo), a
            :func:`~helix_stream.wrap_model` result, or with ``router=`` a model group name.
        messages: The conversation so far, OpenAI format. ``prompt`` appends a user message.
        system: The system prompt (sent first on every call, never changed by the loop).
        tools: A list of tools or a ``{name: Tool}`` dict.
        tools_context: Per-tool contexts by tool name; a tool with a ``context_schema`` gets
            only its own entry, validated (a missing or invalid one raises
            :class:`~helix_stream.errors.ToolContextError` here, before any model call).
        runtime_context: Shared state for the loop, ``prepare_step`` and callbacks; never sent
            to the model or to a tool.
        prepare_step: A step middleware or a list of them (a chain); see
            :class:`~helix_stream.middleware.StepInput`.
        stop_when: A stop condition or a list (any stops); default ``step_count_is(20)``.
            The loop also stops after a step without tool calls.
        telemetry: OpenTelemetry settings (off when ``None``).
        middleware: Model middleware around every call.
        router: A ``litellm.Router``: ``model`` names one of its model groups and each model
            call goes through ``router.acompletion`` (fallbacks, load balancing, cooldowns);
            a step's ``response_model`` names the deployment's model that answered.
        max_retries: Retries of a model call that fails before its first chunk (429, 5xx,
            timeout, lost connection), with exponential backoff and jitter, honouring
            ``Retry-After``; never after a chunk was emitted. litellm's, the Router's and the
            OpenAI client's own retries are switched off. Default 2.
        output: A pydantic model for a structured answer: ``result.output`` is an instance,
            ``result.partial_output_stream()`` yields the partial object as it streams. Asked
            for through the provider's JSON-schema ``response_format`` where litellm reports
            support, else through a ``__finish__`` tool.
        prompt_cache: ``"auto"`` (the default) marks the end of the stable prefix with the
            provider's cache marker where the provider needs one (Anthropic, Bedrock);
            ``False`` sends none. A ``prepare_step`` override ``{"prompt_cache": ...}`` wins
            for its step. See the README, "Context rows".
        token_store: Where the tokens of tools with ``auth=`` are kept between calls; by
            default one in-memory store per process. See the README, "Tools that act for
            the user: authorization".
        on_chunk, on_step_finish, on_finish, on_error: Callbacks, sync or async.
        **litellm_params: Passed through to ``litellm.acompletion`` (temperature, api_base,
            api_key, fallbacks, ...).

    Raises:
        ToolContextError: a tool's context is missing or invalid (nothing was sent).
        InvalidRequestError: a keyword that belongs elsewhere (``output_schema=`` is an
            Agent's) or cannot be sent, litellm's own ``num_retries``, a wrong ``output``,
            a ``prompt_cache`` that is neither ``"auto"`` nor ``False``, two different auth
            strategies of one name (nothing was sent).
    """
    # Every named argument above, as the keywords _start sorts (locals() holds only them here).
    options = {name: value for name, value in locals().items() if name != "litellm_params"}
    return _start("stream_text", **options, **litellm_params)


_CALLBACKS = ("on_chunk", "on_step_finish", "on_finish", "on_error")
_OPTIONS = (
    "model",
    "messages",
    "prompt",
    "system",
    "tools",
    "tools_context",
    "runtime_context",
    "prepare_step",
    "stop_when",
    "telemetry",
    "middleware",
    "router",
    "output",
    "prompt_cache",
    "token_store",
)


def _start(operation: str, **kwargs: Any) -> StreamTextResult:
    """The loop behind ``stream_text`` and ``generate_text``; ``operation`` names the call
    (telemetry's call span). Keywords that are not options go to litellm."""
    if "model" not in kwargs:
        raise TypeError(f"{operation}() needs model=")
    options = {name: kwargs.pop(name, None) for name in _OPTIONS}
    callbacks = {name: kwargs.pop(name, None) for name in _CALLBACKS}
    max_retries = kwargs.pop("max_retries", DEFAULT_MAX_RETRIES)
    config = build_config(
        **options,
        max_retries=max_retries,
        callbacks=callbacks,
        litellm_params=kwargs,
        operation=operation,
    )
    return StreamTextResult(lambda: run_loop(config))


async def generate_text(**kwargs: Any) -> GenerateTextResult:
    """Run the loop to the end and return its text, steps and usage at once.

    Takes the same arguments as :func:`stream_text`.

    Raises:
        HelixError: the run's error (a ``ModelError`` for a failed model call, ...).
    """
    result = _start("generate_text", **kwargs)
    steps = await result.steps()
    return GenerateTextResult(
        text=steps[-1].text if steps else "",
        steps=steps,
        usage=result.usage,
        finish_reason=result.finish_reason or "stop",
        response_messages=result.response_messages,
        output=result.output,
    )
