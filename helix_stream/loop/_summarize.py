"""The loop's side of compaction: the summarizer's model call and the step's compacted request.

This module owns :func:`summarizer_answer` (the summarizer call, sent through a
:class:`~helix_stream.loop._step.ModelCall` as its step's would be) and :func:`compact` (a
step's request, made anew over the compacted history when the agent compacts). The trigger,
the summarizer's request and the compacted history are ``loop/_compaction.py``'s.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any, TypeVar

from ..chunks import Usage
from ..errors import ModelError
from ..models._cache_book import CacheBook, CacheScope
from ..telemetry._recorder import NOOP_RECORDER
from ._compaction import (
    NOT_COMPACTED,
    Compacted,
    PreparedCall,
    Preparing,
    SummarizerCall,
    compact_request,
)
from ._step import ModelCall

__all__ = ["compact", "summarizer_answer"]


async def summarizer_answer(
    request: dict[str, Any], how: SummarizerCall, timeout: Any
) -> tuple[str, Usage]:
    """The summarizer call of a compaction, sent as its step's would be; its text and usage.

    Raises:
        ModelError: it answered no text. Whatever the call raised.
    """
    call = ModelCall(
        request,
        how.middleware,
        NOOP_RECORDER,  # the step's span is not open yet: the step reports it (StepCompaction)
        how.step_number,
        # The step's markers, but a book of its own: the summarizer's request is no request of
        # the session's that the next one should be compared with (the cache ledger).
        CacheScope(book=CacheBook(), mode=how.prompt_cache),
        router=how.router,
        retry=how.retry,
        where=how.where,
        timer=how.timer(timeout),
    )
    async with aclosing(call.chunks()) as chunks:
        async for _ in chunks:  # nothing of it reaches the stream
            pass
    result = call.result()
    text = result.text.strip()
    if not text:
        raise ModelError("the summarizer answered no text (a tool call or an empty answer)")
    return text, result.usage


P = TypeVar("P", bound=PreparedCall)


async def compact(run: Preparing[P], step_number: int, forced: bool) -> tuple[P, Compacted]:
    """Prepare step ``step_number``'s request, compacting first when the agent says so: the
    request is then made anew over the compacted history (its prepare_step runs again)."""
    prepared = await run._prepare(step_number, forced)
    compactor = run.cfg.env.compactor
    if compactor is None:
        return prepared, NOT_COMPACTED
    how = SummarizerCall.like_step(
        run.cfg, run.clock, step_number, prepared.middleware, prepared.prompt_cache
    )
    timeout = prepared.timeout

    async def summarize(request: dict[str, Any]) -> tuple[str, Usage]:
        return await summarizer_answer(request, how, timeout)

    compacted = await compact_request(compactor, prepared.params, summarize)
    if compacted.history is None:
        return prepared, compacted
    # The step's commit is taken again: the compacted history ends with its messages.
    history, taken = list(compacted.history), len(prepared.context.messages)
    run.messages, run.first = history[: len(history) - taken], prepared.context
    return await run._prepare(step_number, forced), compacted
