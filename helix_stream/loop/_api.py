"""``stream_text`` and ``generate_text``: the one-shot loop, AI SDK style."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .._options import DEFAULT_MAX_RETRIES, LoopOptions, split_options
from .._timeout import Timeout
from .._transform import StreamTransform
from ..middleware import ModelMiddleware, WrappedModel
from ..models._cache import PromptCache
from ..prepare_step import PrepareStep
from ..steps import StopCondition
from ..tools import Tool
from ._result import GenerateTextResult, StreamTextResult
from ._run import run_loop
from ._setup import DEFAULT_MAX_STEPS, LoopCall, loop_config, setup_run

if TYPE_CHECKING:
    from ..auth import TokenStore
    from ..telemetry import TelemetrySettings

__all__ = ["DEFAULT_MAX_STEPS", "generate_text", "stream_text"]


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
    timeout: float | Timeout | None = None,
    transform: StreamTransform | Sequence[StreamTransform] | None = None,
    on_chunk: Callable[..., Any] | None = None,
    on_step_finish: Callable[..., Any] | None = None,
    on_finish: Callable[..., Any] | None = None,
    on_error: Callable[..., Any] | None = None,
    on_start: Callable[..., Any] | None = None,
    on_step_start: Callable[..., Any] | None = None,
    on_model_call_start: Callable[..., Any] | None = None,
    on_model_call_end: Callable[..., Any] | None = None,
    on_tool_call_start: Callable[..., Any] | None = None,
    on_tool_call_end: Callable[..., Any] | None = None,
    on_step_end: Callable[..., Any] | None = None,
    on_end: Callable[..., Any] | None = None,
    on_abort: Callable[..., Any] | None = None,
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
        output: A pydantic model for a structured answer: ``result.output`` is an instance,
            ``result.partial_output_stream()`` yields the partial object as it streams.
        **litellm_params: Passed through to ``litellm.acompletion`` (temperature, api_base,
            api_key, fallbacks, ...).

    The other keywords are the run options, described on
    :class:`~helix_stream._options.LoopOptions`: ``tools_context`` (validated here),
    ``runtime_context``, ``prepare_step``, ``stop_when`` (default ``step_count_is(20)``),
    ``telemetry``, ``middleware``, ``router``, ``max_retries`` (retries before a call's first
    chunk, default 2; litellm's own are switched off), ``prompt_cache`` (README, "Prompt
    caching"), ``token_store``, ``timeout`` (README, "Timeouts"), ``transform``
    (``hs.smooth_stream()``) and the callbacks.

    Raises:
        ToolContextError: a tool's context is missing or invalid (nothing was sent).
        InvalidRequestError: a keyword that belongs elsewhere (``output_schema=`` is an
            Agent's) or cannot be sent, litellm's own ``num_retries``, a wrong ``output``,
            ``prompt_cache`` or ``timeout``, two different auth strategies of one name
            (nothing was sent).
    """
    # The named arguments above (locals() holds only them here): the call's own and the run
    # options (helix_stream/_options.py), which _start sorts by name.
    named = {name: value for name, value in locals().items() if name != "litellm_params"}
    return _start("stream_text", **named, **litellm_params)


def _start(
    operation: str,
    *,
    model: str | WrappedModel | None = None,
    messages: Sequence[Mapping[str, Any]] | None = None,
    prompt: str | None = None,
    system: str | None = None,
    tools: Sequence[Tool] | Mapping[str, Tool] | None = None,
    output: type[BaseModel] | None = None,
    **keywords: Any,
) -> StreamTextResult:
    """The loop behind ``stream_text`` and ``generate_text``; ``operation`` names the call
    (telemetry's call span). Keywords that are not run options go to litellm."""
    if model is None:
        raise TypeError(f"{operation}() needs model=")
    options, litellm_params = split_options(keywords)
    call = LoopCall(operation=operation, model=model, system=system, tools=tools, output=output)
    setup = setup_run(call, LoopOptions(**options, settings=litellm_params))
    prompted = [] if prompt is None else [{"role": "user", "content": prompt}]
    config = loop_config(setup, messages=[*(dict(m) for m in messages or ()), *prompted])
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
