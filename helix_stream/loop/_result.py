"""The result objects of ``stream_text``/``generate_text`` (and ``Executor.run``).

:class:`StreamTextResult` reads what the run produced from its chunks as they pass (each
``finish-step`` carries its step, ``finish`` the usage and output, ``error`` the exception):
the loop never writes into the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, cast

from typing_extensions import TypeVar

from ..chunks import (
    Chunk,
    ErrorChunk,
    Finish,
    FinishReason,
    FinishStep,
    StartStep,
    TextDelta,
    ToolInputDelta,
    ToolInputStart,
    Usage,
)
from ..steps import StepResult

if TYPE_CHECKING:
    from starlette.responses import Response

__all__ = ["GenerateTextResult", "OutputT", "StreamTextResult"]

OutputT = TypeVar("OutputT", default=Any)
"""The type of a run's structured answer: the ``output=`` model (``None`` without one)."""


class _Progress:
    """What the chunks seen so far say about the run."""

    __slots__ = ("done", "error", "finish_reason", "output", "steps", "usage")

    def __init__(self) -> None:
        self.steps: list[StepResult] = []
        self.usage = Usage()
        self.finish_reason: FinishReason | None = None
        self.error: BaseException | None = None
        self.output: Any = None
        self.done = False

    def see(self, chunk: Chunk) -> None:
        cls = chunk.__class__
        if cls is FinishStep:
            step = chunk.step  # type: ignore[union-attr]
            if step is not None:
                self.steps.append(step)
                self.usage = self.usage + step.usage
                self.finish_reason = step.finish_reason
        elif cls is Finish:
            self.usage = chunk.usage  # type: ignore[union-attr]
            self.finish_reason = chunk.finish_reason  # type: ignore[union-attr]
            self.output = chunk.output  # type: ignore[union-attr]
            self.done = True
        elif cls is ErrorChunk:
            self.error = chunk.error  # type: ignore[union-attr]
            self.finish_reason = "error"
            self.done = True


async def _observed(
    chunks: AsyncGenerator[Chunk, None], progress: _Progress
) -> AsyncGenerator[Chunk, None]:
    see = progress.see
    async with contextlib.aclosing(chunks):
        async for chunk in chunks:
            see(chunk)
            yield chunk


async def _first_then(first: Chunk, rest: AsyncIterator[Chunk]) -> AsyncGenerator[Chunk, None]:
    try:
        yield first
        async for chunk in rest:
            yield chunk
    finally:
        await _aclose(rest)


async def _aclose(iterator: AsyncIterator[Chunk]) -> None:
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        await aclose()


class StreamTextResult(Generic[OutputT]):
    """A run in progress. Iterate it for chunks, or await what it produced.

    Generic in the type of its structured answer: ``stream_text(..., output=City)`` is a
    ``StreamTextResult[City]``, whose ``output`` is a ``City`` once the run has finished.

    The run starts when it is first iterated (or awaited). It can be iterated once; ``text()``,
    ``steps()`` and ``consume()`` drive whatever is left of it. When the consumer stops
    iterating early, the run is closed — the litellm stream and any running tool are cancelled
    — as soon as the iterator is dropped; ``await result.aclose()`` (or ``async with result``)
    does it at once.

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        async for chunk in result:                      # once; or await result.text() directly
            print(chunk.type)
        print(await result.text(), result.usage.output_tokens)
    """

    def __init__(self, factory: Callable[[], AsyncGenerator[Chunk, None]]) -> None:
        self._factory = factory
        self._state = _Progress()
        self._gen: AsyncGenerator[Chunk, None] | None = None
        self._closing: asyncio.Task[None] | None = None
        self._started: AsyncIterator[Chunk] | None = None

    @classmethod
    def started(cls, first: Chunk, rest: AsyncIterator[Chunk]) -> StreamTextResult[OutputT]:
        """A run already under way (``Executor.start`` read its first chunk): ``first``, then
        the rest of ``rest``. Closing it closes ``rest`` even if it is never iterated again,
        so a started turn that nobody reads still ends at once."""
        result = cls(lambda: _first_then(first, rest))
        result._started = rest
        return result

    def _open(self) -> AsyncGenerator[Chunk, None]:
        self._gen = _observed(self._factory(), self._state)
        return self._gen

    def __aiter__(self) -> AsyncIterator[Chunk]:
        if self._gen is not None:
            raise RuntimeError("a StreamTextResult can be iterated only once")
        iterator = _Iterator(self._open())
        # When the consumer drops its iterator (a `break`), close the run right away rather
        # than when this result object happens to be collected.
        weakref.finalize(iterator, self._schedule_close)
        return iterator

    def _schedule_close(self) -> None:
        if self._gen is None or self._state.done or self._closing is not None:
            return
        # Without a running loop (interpreter shutdown) there is nothing left to cancel.
        with contextlib.suppress(RuntimeError):
            self._closing = asyncio.get_running_loop().create_task(self._gen.aclose())

    async def consume(self) -> None:
        """Run to the end without looking at the chunks (a no-op once finished)."""
        if self._gen is None:
            async for _ in self:
                pass
        elif not self._state.done and self._closing is None:
            async for _ in self._gen:
                pass

    async def aclose(self) -> None:
        """Stop the run now: close the model stream, cancel running tools."""
        if self._gen is None:
            self._open()
            assert self._gen is not None
        if self._closing is not None:
            await self._closing
        else:
            await self._gen.aclose()
        if self._started is not None:
            # An unstarted generator closes without running its body: close what it wraps.
            await _aclose(self._started)

    async def __aenter__(self) -> StreamTextResult[OutputT]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def text(self) -> str:
        """The last step's text (runs to the end first; raises the run's error, if any)."""
        await self._finished()
        return self._state.steps[-1].text if self._state.steps else ""

    async def steps(self) -> list[StepResult]:
        """Every step (runs to the end first; raises the run's error, if any)."""
        await self._finished()
        return list(self._state.steps)

    async def _finished(self) -> None:
        await self.consume()
        if self._state.error is not None:
            raise self._state.error

    @property
    def usage(self) -> Usage:
        """Total token usage of the steps run so far."""
        return self._state.usage

    @property
    def response_messages(self) -> list[dict[str, Any]]:
        """The assistant and tool messages of the steps run so far (OpenAI format)."""
        return [m for step in self._state.steps for m in step.response_messages]

    @property
    def output(self) -> OutputT | None:
        """The structured answer: an instance of ``output=`` (``stream_text``) or of the
        agent's ``output_schema``, once the run has finished; else ``None``."""
        return cast("OutputT | None", self._state.output)

    async def partial_output_stream(self) -> AsyncIterator[Any]:
        """The structured answer as it streams: each partial object (a dict whose fields
        appear as they arrive, not validated) when it changed.

        It iterates the run (instead of ``async for chunk in result``); the validated
        instance is ``result.output`` afterwards. Follows the answer's JSON whichever way it
        comes: the last step's text (a JSON-schema ``response_format``) or the arguments of
        the ``__finish__`` tool call.
        """
        from ..models._partial_json import PartialJSON
        from ..tools import FINISH_TOOL_NAME

        partial = PartialJSON()
        finish_call: str | None = None
        async for chunk in self:
            cls = chunk.__class__
            delta: str | None = None
            if cls is StartStep:
                partial, finish_call = PartialJSON(), None  # a new step: a new answer
            elif cls is TextDelta and finish_call is None:
                delta = chunk.delta  # type: ignore[union-attr]
            elif cls is ToolInputStart and chunk.tool_name == FINISH_TOOL_NAME:  # type: ignore[union-attr]
                partial, finish_call = PartialJSON(), chunk.tool_call_id  # type: ignore[union-attr]
            elif cls is ToolInputDelta and chunk.tool_call_id == finish_call:  # type: ignore[union-attr]
                delta = chunk.delta  # type: ignore[union-attr]
            if delta is not None:
                value = partial.feed(delta)
                if value is not None:
                    yield value
        if self._state.error is not None:
            raise self._state.error

    @property
    def finish_reason(self) -> FinishReason | None:
        return self._state.finish_reason

    @property
    def error(self) -> BaseException | None:
        return self._state.error

    def to_ui_message_stream(self, **options: Any) -> AsyncIterator[dict[str, Any]]:
        """The AI SDK UI message stream of this run (context rows dropped); see
        :func:`helix_stream.transformers.to_ui_message_stream` for the options."""
        from ..transformers import to_ui_message_stream

        return to_ui_message_stream(self, **options)

    def to_sse_response(self, **options: Any) -> Response:
        """A Starlette response serving :meth:`to_ui_message_stream` over SSE."""
        from ..transformers import UIMessageStreamResponse

        return UIMessageStreamResponse(self.to_ui_message_stream(**options))


class _Iterator:
    """The consumer's handle on a run (see ``StreamTextResult.__aiter__``)."""

    __slots__ = ("__weakref__", "_gen")

    def __init__(self, gen: AsyncGenerator[Chunk, None]) -> None:
        self._gen = gen

    def __aiter__(self) -> _Iterator:
        return self

    def __anext__(self) -> Awaitable[Chunk]:
        return self._gen.__anext__()

    async def aclose(self) -> None:
        """Close the run now (cancels the model stream and running tools)."""
        await self._gen.aclose()


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateTextResult(Generic[OutputT]):
    """What ``generate_text`` returns once the run has finished (and ``on_finish`` receives).

    Attributes:
        text: The last step's text.
        steps: Every step.
        usage: The total usage.
        finish_reason: The last step's finish reason.
        response_messages: The assistant and tool messages of all steps (OpenAI format).
        output: The structured answer, an instance of ``output=`` or of the agent's
            ``output_schema``; else ``None``.

    Example::

        result = await hs.generate_text(model="helix/demo", prompt="Hi")   # the finished run
        print(result.text, result.finish_reason, result.usage.total_tokens, len(result.steps))
    """

    text: str
    steps: list[StepResult]
    usage: Usage
    finish_reason: FinishReason
    response_messages: list[dict[str, Any]]
    output: OutputT = cast("OutputT", None)  # noqa: RUF009  # None: no structured answer
