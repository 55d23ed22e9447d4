"""Recovery mid-answer (``stream_retries``): a step's model call that fails after text.

A model call is retried before its first chunk by :mod:`helix_stream.models._retry`. A
failure after text has streamed (a retryable provider error, a ``chunk`` stall) is retried
here, up to ``stream_retries`` times, by the same rule
(:func:`~helix_stream.models._retry.retry_delay`), through the same model (a Router picks
the group's deployment, or its fallback, again):

* where the provider continues a final assistant message
  (:func:`~helix_stream.models._prefill.prefill_request`: Anthropic, Bedrock,
  OpenAI-compatible servers; never through a Router) and the attempt streamed text alone,
  the retry **continues**:
  the failed request's messages, byte for byte, and the text shown as an assistant message;
  the continuation's deltas extend the text part the UI has open, and the step's answer is
  the one text (no repeat);
* elsewhere the step is **redone** when the consumer can drop parts (``stream_redo``): a
  :class:`~helix_stream.chunks.ResetStep` chunk, then the step's chunks again from a new
  request that repeats the failed one's messages byte for byte;
* else the failure ends the step as before.

Each failed attempt is recorded (``on_failed``: the step span's ``helix.attempt_failed``
event and a ``model-call-ended`` event with its error and usage); its usage counts in the
step's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from .._event_stream import EventStream, ModelCallEnded
from .._timeout import RunClock, StreamTimer, Timeout
from ..chunks import (
    Chunk,
    ReasoningDelta,
    ReasoningStart,
    ResetStep,
    TextDelta,
    TextStart,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    Usage,
)
from ..errors import InvalidRequestError
from ..middleware import ModelMiddleware
from ..models._cache_book import CacheScope
from ..models._family import params_family
from ..models._prefill import prefill_request
from ..models._retry import Attempt, RetryPolicy, retry_delay
from ..steps import ModelCallPerformance
from ..telemetry import Recorder
from ._config import LoopConfig
from ._env import StepCommit
from ._model_result import ModelResult
from ._options import LoopOptions
from ._step import ModelCall

__all__ = [
    "OnFailed",
    "StepCall",
    "StreamRetry",
    "attempt_failed",
    "step_call",
    "stream_retries",
    "stream_retry_policy",
]

# Chunks after which an attempt cannot be continued by a prefill (only text can).
_NOT_TEXT = frozenset(
    {ReasoningStart, ReasoningDelta, ToolInputStart, ToolInputDelta, ToolInputAvailable}
)
# ``stream_retries`` when a run does not say: an agent's turns (the Executor, the chat server)
# recover mid-answer once; ``stream_text``/``generate_text`` keep the AI SDK's default of 0.
_DEFAULT_STREAM_RETRIES = {"invoke_agent": 1}

# Called for a failed attempt: the call, its record, the next request (``None``: no retry).
OnFailed = Callable[[ModelCall, Attempt, "dict[str, Any] | None"], Awaitable[None]]
# Makes one attempt's call from its request; ``fresh``: it may commit context on a retry
# before its first chunk (a continuation may not: its last message must stay the prefill).
MakeCall = Callable[[dict[str, Any], bool], ModelCall]


async def attempt_failed(
    events: EventStream,
    recorder: Recorder,
    session_id: str | None,
    step_number: int,
    model: str,
    call: ModelCall,
    attempt: Attempt,
    retry: dict[str, Any] | None,
) -> None:
    """The record of an attempt that failed after text: the step span's
    ``helix.attempt_failed`` event, and a ``model-call-ended`` event with its error and usage
    when it is retried (one that is not ends the step as any failed call does)."""
    recorder.attempt_failed(attempt)
    if retry is None or not events.wants("model-call-ended"):
        return
    await events.emit(
        ModelCallEnded(
            session_id=session_id,
            step_number=step_number,
            model=model,
            performance=call.performance(),
            error=attempt.error,
            usage=call.usage,
            retried=True,
        )
    )


def stream_retries(operation: str, options: LoopOptions) -> int:
    """A run's ``stream_retries``: its own, or the default of its ``operation``.

    Raises:
        InvalidRequestError: a count that is not an integer of 0 or more.
    """
    given = options.stream_retries
    if given is None:
        return _DEFAULT_STREAM_RETRIES.get(operation, 0)
    if not isinstance(given, int) or isinstance(given, bool) or given < 0:
        raise InvalidRequestError(
            f"stream_retries must be an integer of 0 or more, not {given!r} (0: a failure "
            "after text ends the step)."
        )
    return given


def stream_retry_policy(retries: int) -> RetryPolicy:
    """The waits between retries after text: shorter than before the first chunk (the
    provider was answering a moment ago), doubling, or the provider's ``Retry-After``."""
    return RetryPolicy(max_retries=retries, initial_delay=0.5)


class StreamRetry:
    """A step's model call with ``stream_retries`` (see the module docstring); read as a
    :class:`~helix_stream.loop._step.ModelCall`: :meth:`chunks`, then :meth:`result`.

    Args:
        make: Makes one attempt's call from its request.
        params: The step's request.
        step_number: The step.
        retries: Retries after text (``stream_retries``, 1 or more).
        redo: The consumer drops a redone step's parts (``ResetStep``); else only a
            continuation is tried.
        prefill: A continuation may be tried (not through a Router: a model group's
            deployments and fallbacks may speak formats that answer a prefill anew).
        on_failed: Records a failed attempt.
        sleep: The wait between attempts (a test may record it instead).
    """

    def __init__(
        self,
        make: MakeCall,
        params: dict[str, Any],
        *,
        step_number: int,
        retries: int,
        redo: bool,
        on_failed: OnFailed,
        prefill: bool = True,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._make = make
        self._params = params
        self._step_number = step_number
        self._policy = stream_retry_policy(retries)
        self._redo = redo
        self._prefill = prefill
        self._on_failed = on_failed
        self._sleep = sleep
        self._call = make(params, True)
        self._carried = ""  # the answer's text shown by earlier attempts (a continuation)
        self._dropped = 0  # leading characters of this attempt's text not shown (whitespace)
        self._failed_usage = Usage()
        self._rows: list[dict[str, Any]] = []  # rows committed by earlier attempts
        self._sent: list[dict[str, Any]] = []  # the messages the answer's first attempt sent
        self._only_text = True  # the attempt streamed text alone: it can be continued

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        """The step's model chunks, attempt after attempt (see the module docstring)."""
        number = 0
        continuing, trim = False, False
        while True:
            call, began = self._call, time.perf_counter()
            self._only_text = True
            try:
                async with aclosing(call.chunks()) as chunks:
                    async for chunk in chunks:
                        if chunk.__class__ in _NOT_TEXT:
                            self._only_text = False
                        elif continuing:
                            if chunk.__class__ is TextStart:
                                continue  # the part the continuation extends is open
                            if trim and chunk.__class__ is TextDelta:
                                kept = self._trimmed(chunk)
                                if kept is None:
                                    continue
                                chunk, trim = kept, False
                        yield chunk
                return
            except Exception as error:
                if not call.streamed:
                    raise  # before any content: the retries before the first chunk had it
                number += 1
                delay = retry_delay(self._policy, number, error)
                plan = await self._plan(call) if delay is not None else None
                attempt = Attempt(
                    number=number,
                    error=error,
                    delay=delay if plan is not None else None,
                    elapsed=time.perf_counter() - began,
                    after_text=True,
                )
                await self._on_failed(call, attempt, None if plan is None else plan[0])
                if plan is None or delay is None:
                    raise
                self._failed_usage = self._failed_usage + call.usage
                self._rows.extend(call.retry_messages)
                await self._sleep(delay)
                request, continuing, trim = plan
                if continuing:
                    self._carried += call.text[self._dropped :]
                else:
                    self._carried = ""
                    yield ResetStep(step_number=self._step_number)
                self._dropped = 0
                self._call = self._make(request, not continuing)

    async def _plan(self, call: ModelCall) -> tuple[dict[str, Any], bool, bool] | None:
        """The next attempt's request, whether it continues, and whether the
        continuation's leading whitespace is dropped (the prefill lost its trailing one);
        ``None``: no retry (nothing to continue and no redo)."""
        if not self._carried:  # the answer's first attempt: its messages are the prefix
            self._sent = call.sent_messages
        params = self._params
        if self._prefill and self._only_text and call.text:
            family = await params_family(params["model"], params)
            prefill = prefill_request(family, params, self._sent, self.text)
            if prefill is not None:
                return prefill.params, True, bool(prefill.cut)
        if not self._redo:
            return None
        # Redone from the failed request's own messages (rows of its retries included): its
        # bytes are the prefix the provider may have cached.
        return {**params, "messages": self._sent}, False, False

    def _trimmed(self, chunk: TextDelta) -> TextDelta | None:
        """The continuation's delta without the leading whitespace the UI shows already
        (``None``: nothing is left of it)."""
        kept = chunk.delta.lstrip()
        self._dropped += len(chunk.delta) - len(kept)
        return TextDelta(id=chunk.id, delta=kept) if kept else None

    @property
    def retry_messages(self) -> list[dict[str, Any]]:
        """The rows every attempt committed on its retries, in log order."""
        return [*self._rows, *self._call.retry_messages]

    @property
    def done(self) -> bool:
        return self._call.done

    @property
    def text(self) -> str:
        """The answer's text shown so far (earlier attempts' continued text included)."""
        return self._carried + self._call.text[self._dropped :]

    def performance(self) -> ModelCallPerformance:
        """The last attempt's figures."""
        return self._call.performance()

    def result(self) -> ModelResult:
        """The step's model call: one answer (a continuation's text after the text it
        continued), with the failed attempts' usage counted."""
        last = self._call.result()
        text = self.text
        assistant = dict(last.assistant)
        if self._carried:
            assistant["content"] = text or None
        return replace(last, text=text, assistant=assistant, usage=self._failed_usage + last.usage)


StepCall = ModelCall | StreamRetry


def step_call(
    cfg: LoopConfig,
    params: dict[str, Any],
    middleware: tuple[ModelMiddleware, ...],
    cache: CacheScope,
    step_number: int,
    *,
    limits: Timeout,
    clock: RunClock,
    events: EventStream,
    commit: Callable[[], Awaitable[StepCommit]],
) -> StepCall:
    """A step's model call: one :class:`ModelCall`, or with ``stream_retries`` a
    :class:`StreamRetry` over them (each attempt with its own timer over ``limits``;
    ``commit``: the session's commit before a retry before the first chunk)."""

    def make(request: dict[str, Any], fresh: bool = True) -> ModelCall:
        timer = StreamTimer(limits, clock)
        return ModelCall(
            request,
            middleware,
            cfg.recorder,
            step_number,
            cache,
            router=cfg.router,
            retry=cfg.retry,
            where=cfg.where,
            before_retry=commit if fresh else None,
            timer=timer if timer.active else None,
        )

    if not cfg.stream_retries:
        return make(params)
    model = params["model"]
    return StreamRetry(
        make,
        params,
        step_number=step_number,
        retries=cfg.stream_retries,
        redo=cfg.options.stream_redo,
        prefill=cfg.router is None,
        on_failed=lambda call, attempt, retry: attempt_failed(
            events, cfg.recorder, cfg.session_id, step_number, model, call, attempt, retry
        ),
    )
