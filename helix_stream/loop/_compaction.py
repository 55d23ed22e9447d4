"""Compaction before a model call: the trigger, the summarizer call, the compacted history.

Between two model calls, never during one: once a step's request is built, :func:`compact`
counts its input tokens with litellm's counter; over the agent's ``trigger_tokens`` it asks
the session (its :class:`~._env.Compactor`) where the kept tail starts, and sends the
**summarizer call**: this very request — same model, system, tools, history, cache markers
and middleware — with one summarizing row appended, so that its input is read from the
provider's prompt cache. Its text is appended by the session as a ``summary`` row, and the
loop's history becomes the one the session renders from then on
(:mod:`helix_stream.context._summary`). The summarizer's usage is reported apart, on the
step's :class:`~helix_stream.steps.StepCompaction`.

A summarizer that fails (an error, a time limit, an answer with no text) writes nothing: the
step goes on with its request as it was, after a ``context_skipped`` chunk (reason
``compaction_failed``, source ``compaction``); the session logs the failure.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from .._step_parts import Usage
from .._timeout import NO_CLOCK, RunClock, StreamTimer
from ..chunks import Chunk, ContextRowChunk, ContextSkipped
from ..middleware import ModelMiddleware
from ..models._cache import PromptCacheOption
from ..models._litellm import count_tokens
from ..models._retry import RetryPolicy
from ..steps import StepCompaction
from ._config import LoopConfig
from ._env import Compactor, StepCommit

__all__ = [
    "NOT_COMPACTED",
    "Compacted",
    "PreparedCall",
    "Preparing",
    "Summarize",
    "SummarizerCall",
    "compact_request",
    "summarizer_request",
]

# Per message, litellm's counter adds a few tokens beyond the content; per tool, the words of
# its rendering; per image, a count from its size (at most a few thousand). A request whose
# JSON bytes plus these cannot reach the trigger is not counted (a token is at least a byte).
_PER_MESSAGE, _PER_TOOL, _PER_IMAGE = 8, 64, 8_192


@dataclass(frozen=True, slots=True, kw_only=True)
class Compacted:
    """What compacting before a model call did.

    Attributes:
        history: The loop's messages from now on (``None``: unchanged).
        chunks: The summary row's chunk, or the ``context_skipped`` of a failure.
        report: The step's :class:`~helix_stream.steps.StepCompaction` (``None``: none ran).
    """

    history: Sequence[dict[str, Any]] | None = None
    chunks: Sequence[Chunk] = ()
    report: StepCompaction | None = None

    @property
    def usage(self) -> Usage:
        """The summarizer call's usage (none when it did not run)."""
        return self.report.usage if self.report is not None else Usage()


NOT_COMPACTED = Compacted()

# Sends the summarizer's request; its text (an empty one is a failure) and usage.
Summarize = Callable[[dict[str, Any]], Awaitable[tuple[str, Usage]]]


@dataclass(frozen=True, slots=True, kw_only=True)
class SummarizerCall:
    """How the summarizer call is sent: as the step's own call would be."""

    middleware: Sequence[ModelMiddleware]
    prompt_cache: PromptCacheOption
    step_number: int
    router: Any = None
    retry: RetryPolicy | None = None
    where: str = "stream_text"
    clock: RunClock = field(default=NO_CLOCK, compare=False)

    @classmethod
    def like_step(
        cls,
        cfg: LoopConfig,
        clock: RunClock,
        step_number: int,
        middleware: Sequence[ModelMiddleware],
        prompt_cache: PromptCacheOption,
    ) -> SummarizerCall:
        """Sent as step ``step_number``'s call of the run ``cfg`` would be."""
        return cls(
            middleware=middleware,
            prompt_cache=prompt_cache,
            step_number=step_number,
            router=cfg.router,
            retry=cfg.retry,
            where=cfg.where,
            clock=clock,
        )

    def timer(self, timeout: Any) -> StreamTimer | None:
        """The call's time limits: the step's (``timeout``: a prepare_step override)."""
        timer = StreamTimer(self.clock.limits.for_step(timeout), self.clock)
        return timer if timer.active else None


def _may_exceed(params: Mapping[str, Any], trigger: int) -> bool:
    messages = params.get("messages") or []
    tools = params.get("tools") or []
    text = json.dumps([messages, tools], ensure_ascii=False)
    size = len(text.encode()) + _PER_IMAGE * text.count('"image_url"')
    return size + _PER_MESSAGE * len(messages) + _PER_TOOL * len(tools) >= trigger


def summarizer_request(
    params: Mapping[str, Any], row: Mapping[str, Any], model: str | None
) -> dict[str, Any]:
    """The summarizer's request: ``params`` (the step's) with ``row`` appended, and
    ``model`` instead of the step's when given."""
    request = {**params, "messages": [*params["messages"], dict(row)]}
    if model is not None:
        request["model"] = model
    return request


async def compact_request(
    compactor: Compactor, params: Mapping[str, Any], summarize: Summarize
) -> Compacted:
    """Compact before the call of ``params`` if it is over the trigger (module docstring);
    ``summarize`` sends the summarizer's request and returns its text and usage.

    Raises:
        Exception: what the session's write of the summary raised (the summarizer's own
            failures are not raised: the step goes on uncompacted).
    """
    settings = compactor.settings
    if not _may_exceed(params, settings.trigger_tokens):
        return NOT_COMPACTED
    tokens = count_tokens(params)
    if tokens <= settings.trigger_tokens:
        return NOT_COMPACTED
    keep_from = await compactor.plan()
    if keep_from is None:
        return NOT_COMPACTED
    request = summarizer_request(params, compactor.summarizer_message(), settings.model)
    model = str(request["model"])
    try:
        text, usage = await summarize(request)
    except Exception as exc:
        compactor.failed(exc)
        skipped = ContextSkipped(reason="compaction_failed", source="compaction")
        report = StepCompaction(model=model, request_tokens=tokens, error=str(exc)[:500])
        return Compacted(chunks=[skipped], report=report)
    commit = await compactor.append(text, keep_from=keep_from, model=model)
    seqs = [c.row.seq for c in commit.chunks if isinstance(c, ContextRowChunk)]
    seq = seqs[-1] if seqs else None
    report = StepCompaction(model=model, request_tokens=tokens, usage=usage, summary_seq=seq)
    return Compacted(history=list(commit.messages), chunks=list(commit.chunks), report=report)


class PreparedCall(Protocol):
    """A step's request, ready to send (the loop's ``_Prepared``)."""

    @property
    def context(self) -> StepCommit: ...
    @property
    def params(self) -> dict[str, Any]: ...
    @property
    def middleware(self) -> tuple[ModelMiddleware, ...]: ...
    @property
    def prompt_cache(self) -> PromptCacheOption: ...
    @property
    def timeout(self) -> Any: ...


P_co = TypeVar("P_co", bound=PreparedCall, covariant=True)


class Preparing(Protocol[P_co]):
    """What :func:`compacting` needs of the run: its config, clock, history and preparation."""

    cfg: LoopConfig
    clock: RunClock
    messages: list[dict[str, Any]]
    first: StepCommit | None

    async def _prepare(self, step_number: int, forced: bool) -> P_co: ...
