"""The result objects of ``stream_text``/``generate_text`` (and ``Executor.run``)."""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..chunks import Chunk, FinishReason, Usage
from ._run import RunState
from ._steps import StepResult

if TYPE_CHECKING:
    from starlette.responses import Response

__all__ = ["GenerateTextResult", "StreamTextResult"]


class StreamTextResult:
    """A run in progress. Iterate it for chunks, or await what it produced.

    The run starts when it is first iterated (or awaited). It can be iterated once; ``text()``,
    ``steps()`` and ``consume()`` drive whatever is left of it. When the consumer stops
    iterating early, the run is closed — the litellm stream and any running tool are cancelled
    — as soon as the iterator is dropped; ``await result.aclose()`` (or ``async with result``)
    does it at once.
    """

    def __init__(self, factory: Callable[[], AsyncGenerator[Chunk, None]], state: RunState) -> None:
        self._factory = factory
        self._state = state
        self._gen: weakref.ref[AsyncGenerator[Chunk, None]] | None = None
        self._started = False

    def __aiter__(self) -> AsyncIterator[Chunk]:
        if self._started:
            raise RuntimeError("a StreamTextResult can be iterated only once")
        self._started = True
        gen = self._factory()
        # A weak reference only: if the consumer drops its iterator, the generator is
        # finalized (and so closed) instead of being kept alive by this object.
        self._gen = weakref.ref(gen)
        return gen

    async def consume(self) -> None:
        """Run to the end without looking at the chunks (a no-op once finished)."""
        if not self._started:
            async for _ in self:
                pass
            return
        gen = self._gen() if self._gen is not None else None
        if gen is not None and not self._state.done:
            async for _ in gen:
                pass

    async def aclose(self) -> None:
        """Stop the run now: close the model stream, cancel running tools."""
        self._started = True
        gen = self._gen() if self._gen is not None else None
        if gen is not None:
            await gen.aclose()

    async def __aenter__(self) -> StreamTextResult:
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
        return list(self._state.response_messages)

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


@dataclass(frozen=True, slots=True, kw_only=True)
class GenerateTextResult:
    """What ``generate_text`` returns once the run has finished."""

    text: str
    steps: list[StepResult]
    usage: Usage
    finish_reason: FinishReason
    response_messages: list[dict[str, Any]]
