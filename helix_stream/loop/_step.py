"""One model call of the loop: the stream through model middleware, the parse, a step's figures.

This module owns :class:`ModelCall` (send, stream, parse; the litellm stream is closed
whatever happens) and the assembly of a finished step (:func:`step_result`,
:func:`step_performance`). The request is built by ``loop/_request.py``, the call's result
assembled and priced by ``loop/_model_result.py``. The stream is opened by
:func:`~helix_stream.models._retry.open_stream`: the retry policy applies until the first
chunk, never after it; before a retried attempt the session commits the context that came
meanwhile (``before_retry``), and the attempt carries its rows.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

from .._timeout import StreamTimer
from ..chunks import Chunk, DataChunk, Usage
from ..middleware import ModelMiddleware, call_with_middleware
from ..models._cache import cache_settings, with_cache_breakpoints
from ..models._cache_book import CacheBook, CacheEntry, CacheScope
from ..models._fields import has_content
from ..models._lean_stream import read_path
from ..models._litellm import acompletion, translate_error
from ..models._parse import StepParser
from ..models._retry import Attempt, RetryPolicy, open_content_stream
from ..steps import (
    ModelCallPerformance,
    StepPerformance,
    StepResult,
    ToolCall,
    ToolResult,
)
from ..telemetry import Recorder
from ..telemetry._filters import credential_strings
from ._env import StepCommit
from ._model_result import ModelResult, model_result
from ._params import check_run_options
from ._retry_status import opening, retry_status
from ._tool_media import with_tool_media

__all__ = ["ModelCall", "step_performance", "step_result"]


class ModelCall:
    """One model call. Iterate :meth:`chunks`, then read :meth:`result`.

    Args:
        params: The request (see :func:`~helix_stream.loop._request.request_params`).
        middleware: Model middleware, outermost first.
        recorder: Telemetry.
        step_number: The step this call belongs to.
        cache: The call's prompt caching (:func:`~helix_stream.loop._request.cache_scope`):
            its ``prompt_cache`` value, the cache ledger's book and session, ``ttl="auto"``'s
            hints; ``None``: markers as ``"auto"`` puts them and a book of its own, compared
            with nothing.
        router: A ``litellm.Router`` to call instead of ``litellm.acompletion``.
        retry: The retry policy (until the first chunk).
        where: Where the litellm params came from (for the message of a refused one).
        before_retry: The session's commit before a retried attempt; what it commits is
            sent with that attempt, its chunks come first, and its messages are in
            :attr:`retry_messages` (for the loop's own list, before the step's response).
        timer: The call's time limits (``timeout=``), or ``None`` when it has none.
    """

    def __init__(
        self,
        params: dict[str, Any],
        middleware: Sequence[ModelMiddleware],
        recorder: Recorder,
        step_number: int,
        cache: CacheScope | None = None,
        *,
        router: Any = None,
        retry: RetryPolicy | None = None,
        where: str = "stream_text",
        before_retry: Callable[[], Awaitable[StepCommit]] | None = None,
        timer: StreamTimer | None = None,
    ) -> None:
        self._params = params
        self._cache = cache if cache is not None else CacheScope(book=CacheBook())
        self._cache_entry: CacheEntry | None = None
        self._provider_stream: Any = None
        self._timer = timer
        # Loop time: the timer's clock (a chunk reads it once or twice).
        self._clock = asyncio.get_running_loop().time
        self._began = self._clock()
        self._first: float | None = None
        self._last = 0.0
        self._ended: float | None = None
        self._gaps: list[float] = []
        self.done = False  # the stream ended cleanly
        self._before_retry = before_retry
        self.retry_messages: list[dict[str, Any]] = []
        self._retry_chunks: list[Chunk] = []
        self._status: list[DataChunk] = []  # data-retry parts not yet handed on
        self._middleware = middleware
        self._recorder = recorder
        self._router = router
        self._retry = retry
        self._where = where
        self._parser = StepParser(step_number)
        self._closing: list[Chunk] = []
        self._calls: list[ToolCall] = []
        self._credentials: frozenset[str] = frozenset()
        self._read_path: Literal["direct", "litellm"] | None = None

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        """The model's chunks as they stream, then the ones that close its open parts."""
        parser, timer, clock, gaps = self._parser, self._timer, self._clock, self._gaps
        self._began = clock()
        opened: list[tuple[list[Any], AsyncIterator[Any]]] = []
        # Opened in this task (the timer cancels it), saying so while attempts are retried.
        async for status in opening(self._open(), self._status, opened.append):
            yield status
        prefix, stream = opened[0]
        for chunk in self._retry_chunks:
            yield chunk
        read = stream.__anext__
        try:
            for raw in prefix:
                for chunk in parser.feed(raw):
                    if self._first is None:
                        self._first = self._last = self._first_content(clock())
                    yield chunk
            if timer is not None:
                timer.content(clock())
            while True:
                if timer is not None:
                    timer.waiting = True
                try:
                    raw = await read()
                except StopAsyncIteration:
                    break
                except asyncio.CancelledError as exc:
                    # One timer for the whole call (_timeout.py): its own cancellation
                    # is the limit that fired; any other is the consumer's.
                    timed_out = timer.timed_out(exc) if timer is not None else None
                    if timed_out is None:
                        raise
                    raise timed_out from None
                finally:
                    if timer is not None:
                        timer.waiting = False
                out = parser.feed(raw)
                if out:
                    now = clock()
                    if self._first is None:
                        self._first = self._first_content(now)
                    else:
                        gaps.append(now - self._last)
                    self._last = now
                    for chunk in out:
                        yield chunk
                    if timer is not None:  # the consumer's time is not the provider's silence
                        timer.since = clock()
        except Exception as exc:
            raise translate_error(exc) from exc
        finally:
            self._ended = clock()
            if timer is not None:
                timer.close()
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        closing, self._calls = parser.finish()
        self.done = True
        for chunk in closing:
            yield chunk

    def _first_content(self, now: float) -> float:
        # The one time to first chunk (README, "Telemetry"): the span attribute, the GenAI
        # metric and the lifecycle figure all take this value, to the first content-bearing
        # chunk, from the same start.
        self._recorder.first_chunk(now - self._began)
        return now

    def performance(self) -> ModelCallPerformance:
        """How fast the call answered (once :meth:`chunks` has ended, however it ended)."""
        began, first, gaps = self._began, self._first, self._gaps
        ended = self._ended if self._ended is not None else self._clock()
        response_time = max(0.0, ended - began)
        usage = self._parser.usage
        after_first = ended - first if first is not None else 0.0
        return ModelCallPerformance(
            response_time=response_time,
            time_to_first_chunk=None if first is None else first - began,
            output_tokens_per_second=usage.output_tokens / after_first
            if after_first > 0 and usage.output_tokens
            else None,
            effective_total_tokens_per_second=usage.total_tokens / response_time
            if response_time > 0 and usage.total_tokens
            else None,
            longest_gap=max(gaps, default=0.0),
            median_gap=statistics.median(gaps) if gaps else 0.0,
            read_path=self._read_path,
        )

    async def _open(self) -> tuple[list[Any], AsyncIterator[Any]]:
        """Send the request (retried before its first content) and open its stream."""
        recorder, router, middleware = self._recorder, self._router, self._middleware
        cache = self._cache
        prompt_cache, settings = cache.mode, cache_settings(cache.mode)

        async def send(**final: Any) -> Any:
            # Cache markers go on last, after model middleware: they must mark the messages
            # and the model that are really sent (README, "Prompt caching"); tool images take
            # the form the model's provider accepts first (``_tool_media.py``).
            final = await with_cache_breakpoints(
                await with_tool_media(final), prompt_cache, cache.hints
            )
            # The ledger compares what is really sent, once per attempt (never per chunk).
            self._cache_entry, final = cache.book.entry(
                cache.session_id,
                final,
                diagnostics=settings.diagnostics if settings is not None else False,
            )
            recorder.request_sent(final)  # after middleware: what is really sent
            # Middleware may add keys: a tool error that quotes one must not pass it on.
            self._credentials = frozenset(credential_strings(final))
            # The parser reads chunks by attribute; middleware may expect litellm's objects.
            stream = await acompletion(router=router, direct=not middleware, **final)
            self._read_path = read_path(stream)  # per call: each attempt decides anew
            self._provider_stream = stream
            return stream

        async def attempt(params: dict[str, Any]) -> Any:
            return await call_with_middleware(send, middleware, params)

        timer = self._timer
        try:
            check_run_options(self._params, where=self._where)
            return await open_content_stream(
                attempt,
                self._params,
                self._retry,
                on_attempt=self._attempt_failed,
                where=self._where,
                before_retry=self._again if self._before_retry is not None else None,
                is_content=has_content if timer is not None else None,
                guard=timer,
            )
        except BaseException:
            if timer is not None:
                timer.close()
            raise

    def _attempt_failed(self, attempt: Attempt) -> None:
        """Telemetry's record of a failed attempt; the UI's ``data-retry`` part if retried."""
        self._recorder.attempt_failed(attempt)
        if attempt.delay is not None:
            attempts = (self._retry or RetryPolicy()).max_retries + 1
            part = retry_status(attempt.number, attempts, attempt.error, attempt.delay)
            self._status.append(part)

    async def _again(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request of a retried attempt: with the rows the session committed for it."""
        assert self._before_retry is not None
        commit = await self._before_retry()
        self.retry_messages.extend(commit.messages)
        self._retry_chunks.extend(commit.chunks)
        return {**request, "messages": [*request["messages"], *commit.messages]}

    @property
    def text(self) -> str:
        """The text streamed so far (all of it, once :meth:`chunks` has finished)."""
        return "".join(self._parser.text)

    @property
    def streamed(self) -> bool:
        """Content has streamed: a failure now is one after text (``stream_retries``)."""
        return self._first is not None

    @property
    def sent_messages(self) -> list[dict[str, Any]]:
        """The messages the last attempt sent (with the rows of its retries)."""
        return [*self._params["messages"], *self.retry_messages]

    @property
    def usage(self) -> Usage:
        """The usage reported so far (a failed call's too, as far as it came)."""
        return self._parser.usage

    def result(self) -> ModelResult:
        """The assembled call (after :meth:`chunks` has finished)."""
        return model_result(
            self._parser,
            self._calls,
            self._params["model"],
            credentials=self._credentials,
            cache_entry=self._cache_entry,
            provider_stream=self._provider_stream,
        )


def step_result(
    step_number: int,
    model: ModelResult,
    results: list[ToolResult],
    messages: list[dict[str, Any]],
    runtime_context: Mapping[str, Any],
    data: Sequence[DataChunk] = (),
    performance: StepPerformance | None = None,
) -> StepResult:
    """A finished step: the model's answer, the tools' results, the messages it adds."""
    return StepResult(
        step_number=step_number,
        text=model.text,
        reasoning=model.reasoning,
        tool_calls=model.calls,
        tool_results=results,
        finish_reason=model.finish_reason,
        usage=model.usage,
        response_model=model.response_model,
        response_messages=messages,
        runtime_context=runtime_context,
        sources=list(model.sources),
        data=list(data),
        performance=performance,
        cache=model.cache,
        compaction=model.compaction,
    )


def step_performance(
    began: float, model: ModelCallPerformance | None, tool_time: float = 0.0
) -> StepPerformance:
    """A step's figures, ``began`` (``perf_counter``) to now."""
    model_time = model.response_time if model is not None else 0.0
    return StepPerformance(
        step_time=time.perf_counter() - began,
        model_time=model_time,
        tool_time=tool_time,
        model=model,
    )
