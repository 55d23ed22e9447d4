"""``stream_text`` and ``generate_text``: the one-shot loop, AI SDK style."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Generic, ParamSpec

from pydantic import BaseModel
from typing_extensions import TypeVar, Unpack

from .._sync import SyncStream, check_no_running_loop, run_sync
from ..chunks import Chunk, Usage
from ..middleware import WrappedModel
from ..steps import StepResult
from ..tools import Tool
from ._options import LoopOptions, RunKeywords, documents_options, split_options
from ._result import GenerateTextResult, OutputT, StreamTextResult
from ._run import run_loop
from ._setup import DEFAULT_MAX_STEPS, LoopCall, loop_config, setup_run

__all__ = [
    "DEFAULT_MAX_STEPS",
    "StreamTextSyncResult",
    "generate_text",
    "generate_text_sync",
    "stream_text",
    "stream_text_sync",
]

P = ParamSpec("P")
R = TypeVar("R")
Model = TypeVar("Model", bound=BaseModel, default=Any)
"""The ``output=`` model of a run (``Any`` without one)."""
Messages = Sequence[Mapping[str, Any]]
AnyTool = Tool[Any, Any, Any]
Tools = Sequence[AnyTool] | Mapping[str, AnyTool]


@documents_options
def stream_text(
    *,
    model: str | WrappedModel,
    messages: Messages | None = None,
    prompt: str | None = None,
    system: str | None = None,
    tools: Tools | None = None,
    output: type[Model] | None = None,
    **options: Unpack[RunKeywords],
) -> StreamTextResult[Model]:
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
        prompt: A user message to append.
        system: The system prompt (sent first on every call, never changed by the loop).
        tools: A list of tools or a ``{name: Tool}`` dict.
        output: A pydantic model for a structured answer: ``result.output`` is an instance,
            ``result.partial_output_stream()`` yields the partial object as it streams.
        {run options}
        **litellm_params: litellm's parameters by name (``temperature``, ``api_base``,
            ``api_key``, ``fallbacks``, ...): the OpenAI chat parameters, the call parameters
            litellm lists, and those litellm reports as supported for the model.

    Raises:
        TypeError: a keyword that is neither an option nor a litellm parameter (the message
            names the closest known one; nothing was sent).
        ToolContextError: a tool's context is missing or invalid (nothing was sent).
        InvalidRequestError: a keyword that belongs elsewhere (``output_schema=`` is an
            Agent's) or cannot be sent, litellm's own ``num_retries``, a wrong ``output``,
            ``prompt_cache`` or ``timeout``, two different auth strategies of one name
            (nothing was sent).
    """
    return _start(
        "stream_text",
        model=model,
        messages=messages,
        prompt=prompt,
        system=system,
        tools=tools,
        output=output,
        keywords=options,
    )


def _start(
    operation: str,
    *,
    model: str | WrappedModel,
    messages: Messages | None,
    prompt: str | None,
    system: str | None,
    tools: Tools | None,
    output: type[BaseModel] | None,
    keywords: Mapping[str, Any],
) -> StreamTextResult[Any]:
    """The loop behind ``stream_text`` and ``generate_text``; ``operation`` names the call
    (telemetry's call span). Keywords that are not run options are litellm params."""
    options, litellm_params = split_options(keywords)
    call = LoopCall(operation=operation, model=model, system=system, tools=tools, output=output)
    setup = setup_run(call, LoopOptions(**options, settings=litellm_params))
    prompted = [] if prompt is None else [{"role": "user", "content": prompt}]
    config = loop_config(setup, messages=[*(dict(m) for m in messages or ()), *prompted])
    return StreamTextResult(lambda: run_loop(config))


@documents_options
async def generate_text(
    *,
    model: str | WrappedModel,
    messages: Messages | None = None,
    prompt: str | None = None,
    system: str | None = None,
    tools: Tools | None = None,
    output: type[Model] | None = None,
    **options: Unpack[RunKeywords],
) -> GenerateTextResult[Model]:
    """Run the loop to the end and return its text, steps and usage at once.

    Example::

        out = await hs.generate_text(model="helix/demo", prompt="Hi")
        print(out.text, out.usage)

    Args:
        model: As for :func:`stream_text`.
        messages: As for :func:`stream_text`.
        prompt: As for :func:`stream_text`.
        system: As for :func:`stream_text`.
        tools: As for :func:`stream_text`.
        output: A pydantic model: ``out.output`` is an instance of it.
        {run options}
        **litellm_params: As for :func:`stream_text`.

    Raises:
        TypeError: an unknown keyword, as for :func:`stream_text` (nothing was sent).
        HelixError: the run's error (a ``ModelError`` for a failed model call, ...).
    """
    result = _start(
        "generate_text",
        model=model,
        messages=messages,
        prompt=prompt,
        system=system,
        tools=tools,
        output=output,
        keywords=options,
    )
    return await finished(result)


async def finished(result: StreamTextResult[Any]) -> GenerateTextResult[Any]:
    """Run ``result`` to its end: what ``generate_text`` returns."""
    steps = await result.steps()
    return GenerateTextResult(
        text=steps[-1].text if steps else "",
        steps=steps,
        usage=result.usage,
        finish_reason=result.finish_reason or "stop",
        response_messages=result.response_messages,
        output=result.output,
    )


def _sync_form(
    fn: Callable[P, Coroutine[Any, Any, R]], name: str, form: str, doc: str
) -> Callable[P, R]:
    """``fn`` for code without an event loop: the same arguments and result (see
    :mod:`._sync`)."""

    def sync(*args: P.args, **kwargs: P.kwargs) -> R:
        check_no_running_loop(name, form)
        return run_sync(name, form, fn(*args, **kwargs))

    sync.__name__ = sync.__qualname__ = name
    sync.__doc__ = doc
    return sync


generate_text_sync = _sync_form(
    generate_text,
    "generate_text_sync",
    "await hs.generate_text(...)",
    """:func:`generate_text` for code without an event loop (a script, a sync view, a task).

    Example::

        out = hs.generate_text_sync(model="helix/demo", prompt="Hi")
        print(out.text)

    Takes the arguments of :func:`generate_text` and returns what it returns.

    Raises:
        RuntimeError: called where an event loop is running: ``await hs.generate_text(...)``
            there.
        TypeError: an unknown keyword, as for :func:`stream_text` (nothing was sent).
        HelixError: the run's error.
    """,
)


def _streamed(
    fn: Callable[P, StreamTextResult[OutputT]],
) -> Callable[P, StreamTextSyncResult[OutputT]]:
    def stream_text_sync(*args: P.args, **kwargs: P.kwargs) -> StreamTextSyncResult[OutputT]:
        """:func:`stream_text` for code without an event loop: iterate it with ``for``.

        Example::

            result = hs.stream_text_sync(model="helix/demo", prompt="Hi")
            for chunk in result:
                ...
            print(result.text, result.usage, len(result.steps))

        Takes the arguments of :func:`stream_text`. Returns an iterator of the same chunks,
        with ``text``, ``usage``, ``steps`` and ``output`` once consumed
        (:class:`StreamTextSyncResult`).

        Raises:
            RuntimeError: called where an event loop is running: ``hs.stream_text(...)``
                there.
            TypeError: an unknown keyword, as for :func:`stream_text` (nothing was sent).
        """
        check_no_running_loop("stream_text_sync", "hs.stream_text(...)")
        return StreamTextSyncResult(fn(*args, **kwargs))

    return stream_text_sync


class StreamTextSyncResult(SyncStream[Chunk], Generic[OutputT]):
    """A run read from code without an event loop (:func:`stream_text_sync`).

    Iterate it for the chunks; ``text``, ``steps``, ``usage`` and ``output`` run it to its
    end first if it is not consumed yet (and raise the run's error, if any). ``close()`` (or a
    ``with`` block) stops it early.

    Example::

        def summarize() -> str:                 # plain code, no event loop (a script, a view)
            result = hs.stream_text_sync(model="helix/demo", prompt="Hi")
            for chunk in result:
                print(chunk.type)
            return result.text
    """

    def __init__(self, result: StreamTextResult[OutputT]) -> None:
        super().__init__(result.__aiter__())
        self._result = result

    def _consumed(self) -> StreamTextResult[OutputT]:
        for _ in self:
            pass
        if self._result.error is not None:
            raise self._result.error
        return self._result

    @property
    def text(self) -> str:
        """The last step's text."""
        steps = self._consumed()._state.steps
        return steps[-1].text if steps else ""

    @property
    def steps(self) -> list[StepResult]:
        """Every step."""
        return list(self._consumed()._state.steps)

    @property
    def usage(self) -> Usage:
        """The total token usage."""
        return self._consumed().usage

    @property
    def output(self) -> OutputT | None:
        """The structured answer (an instance of ``output=``), or ``None``."""
        return self._consumed().output


stream_text_sync = _streamed(stream_text)
