"""The turn environment: the one value a session hands the loop for a turn (:class:`TurnEnv`).

The loop knows nothing of stores or sessions. What it needs of its session it is given once,
before the run starts, as data:

* a :class:`TurnLog`, the persistence protocol, three methods: :meth:`~TurnLog.commit` what a
  model call is given (the context pass: messages, chunks, and the tools switched off, which
  the loop's tool gate reads), :meth:`~TurnLog.persist` a finished step, and
  :meth:`~TurnLog.end` how the run ended;
* a :class:`CallContexts`, the factory of each call's :class:`~helix_stream.ToolContext`, with
  everything a call needs closed over (the session, where its context items are queued, the
  sandbox and skills, how tokens resolve and where a call waiting for a sign-in is parked);
* the session's own start events, awaited after the ``start`` chunk;
* a :class:`~._resume.Resume` when the turn carries on a paused one: the calls it waited for,
  which the loop settles itself before its first step (``loop/_resume.py``);
* a :class:`Compactor` when the agent compacts its sessions (``loop/_compaction.py``).

A plain ``stream_text`` call runs in :data:`PLAIN`: no session, nothing to commit or persist.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .._tool_context import ChunkWriter, ContextQueue, SandboxAccess, ToolContext
from ..auth._cache import AuthSettings, CallAuth
from ..auth._flow import ParkForSignIn
from ..chunks import Chunk, ToolAuthorizationRequest
from ..models._cache_book import CacheBook
from ..steps import StepResult, ToolCall, ToolResult
from ..tools import Tool
from ._budget import SessionBudget
from ._side_effects import CallRecorder

if TYPE_CHECKING:
    from ..context._compaction import Compaction
    from ..state import SessionInfo

__all__ = [
    "PLAIN",
    "CallContexts",
    "Compactor",
    "Parker",
    "Resume",
    "ResumeCall",
    "Resumed",
    "RunEnd",
    "StepCommit",
    "TurnEnv",
    "TurnLog",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeCall:
    """A call a paused turn waited for, and what the session decided for it.

    Attributes:
        call: The call.
        ui_message_id: The id of the UI message the call belongs to.
        settled: Its stored tool message and chunk, when the session settled it; ``None``:
            run it.
        signed_in: It waited for a sign-in that completed: its re-run never parks again.
    """

    call: ToolCall
    ui_message_id: str
    settled: tuple[dict[str, Any], Chunk] | None = None
    signed_in: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """The calls a paused turn waited for (``moved_on``: the turn has a new user message, so
    nothing can wait any more and the results go to the calls' own earlier message)."""

    calls: tuple[ResumeCall, ...]
    moved_on: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Resumed:
    """What running the resumed calls produced.

    Attributes:
        ran: Each call that ran and was answered: its tool message and result status.
        parked: The calls that parked on a sign-in again (no message: they keep waiting).
        results: Each call that ran: its result.
    """

    ran: dict[str, tuple[dict[str, Any], str]]
    parked: frozenset[str]
    results: dict[str, ToolResult] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCommit:
    """What a session committed before a model call (its context pass: not to be confused
    with the step_context hook, one of the sources the pass reads).

    Attributes:
        messages: Messages committed for this call (the user's message, settled tool
            results, context rows), as the model sees them; the loop appends them.
        chunks: Chunks to emit for them (``context-row``, ``context_skipped``).
        inactive: The tools switched off as of this commit: the loop's tool gate answers a
            call to one of them ``tool_inactive`` (``__finish__`` is never among them).
        paused: Nothing was committed: the turn paused instead (a call it resumed parked on a
            sign-in again), and the loop ends without a model call.
    """

    messages: Sequence[dict[str, Any]] = ()
    chunks: Sequence[Chunk] = ()
    inactive: frozenset[str] = frozenset()
    paused: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnd:
    """How a run ended, as the loop tells its session (:meth:`TurnLog.end`).

    Attributes:
        error: The run's error (what its ``error`` chunk carried), or ``None``.
        finished: The run produced its ``finish`` chunk.
        unfinished_text: The text the step in progress had streamed when the run failed or
            was cut short (``""`` between steps): what the user saw of that step.
    """

    error: BaseException | None = None
    finished: bool = False
    unfinished_text: str = ""


class TurnLog(Protocol):
    """What a session persists of a run: three moments, nothing else."""

    async def commit(
        self, step_number: int, *, retry: bool = False, resumed: Resumed | None = None
    ) -> StepCommit:
        """Commit the context for the model call about to be made (``retry``: a retried
        attempt of it; ``resumed``: what settling a paused turn's calls produced, given with
        the first call's commit)."""
        ...

    async def persist(self, step: StepResult, *, final: bool) -> None:
        """Persist and report a finished step; ``final``: the loop stops after it."""
        ...

    async def end(self, how: RunEnd) -> None:
        """The run is over (called once, last, however it ended; it must not raise)."""
        ...


class Compactor(Protocol):
    """What a session whose agent compacts gives the loop: the settings, where the kept tail
    starts, the summarizing row, and the append of the summary (``loop/_compaction.py``)."""

    @property
    def settings(self) -> Compaction: ...

    async def plan(self) -> int | None:
        """The seq the kept tail starts at, or ``None`` when there is nothing to summarize."""
        ...

    def summarizer_message(self) -> dict[str, Any]:
        """The summarizing row, as the model is sent it (the summarizer request's last)."""
        ...

    async def append(self, summary: str, *, keep_from: int, model: str) -> StepCommit:
        """Append the summary row; the commit's messages are the whole history the model
        sees from now on (they replace the loop's), its chunks the row's."""
        ...

    def failed(self, error: BaseException) -> None:
        """The summarizer failed: nothing was written (the turn goes on uncompacted)."""
        ...


class _NoLog:
    """The log of a plain ``stream_text`` call: nothing to commit or persist."""

    async def commit(
        self, step_number: int, *, retry: bool = False, resumed: Resumed | None = None
    ) -> StepCommit:
        return _EMPTY

    async def persist(self, step: StepResult, *, final: bool) -> None:
        return None

    async def end(self, how: RunEnd) -> None:
        return None


_EMPTY = StepCommit()

# Keeps the sign-in a parked call waits for; the chunk that shows its URL.
Parker = Callable[[ParkForSignIn], Awaitable[ToolAuthorizationRequest]]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallContexts:
    """How each tool call's :class:`~helix_stream.ToolContext` is made (see the module
    docstring).

    Attributes:
        session: The session the calls run in.
        queue: A call's context queue, by call and tool (``ctx.add_context``).
        sandbox: The agent's sandbox and skills (``ctx.get_sandbox``, ``ctx.get_skill``).
        auth: How calls resolve tokens; ``None``: as the run's options say.
        park: Where a call that waits for a sign-in is parked; ``None``: nothing can wait.
        scope: Binds the session scope around user code (the tools' tasks are made in it,
            and the loop runs prepare_step, stop conditions and callbacks in it).
        ledger: Where a ``side_effects=True`` tool's calls are recorded, before they run
            and after (``loop/_side_effects.py``); ``None``: nowhere (no session).
    """

    session: SessionInfo | None = None
    queue: Callable[[ToolCall, Tool], ContextQueue] | None = None
    sandbox: SandboxAccess | None = None
    auth: AuthSettings | None = None
    park: Parker | None = None
    scope: Callable[[], AbstractContextManager[None]] = nullcontext
    ledger: CallRecorder | None = None

    def make(
        self,
        call: ToolCall,
        tool: Tool,
        context: Any,
        *,
        writer: ChunkWriter,
        tokens: CallAuth | None,
    ) -> ToolContext[Any]:
        """The ``ctx`` of ``call`` (``writer``: into the run's stream; ``tokens``: the call's
        share of its step's token cache)."""
        return ToolContext(
            context=context,
            tool_call_id=call.id,
            tool_name=tool.name,
            session=self.session,
            queue=self.queue(call, tool) if self.queue is not None else None,
            tokens=tokens,
            sandbox=self.sandbox,
            writer=writer,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnEnv:
    """What a session hands the loop for one turn (see the module docstring).

    Attributes:
        log: What the session persists of the run.
        calls: The factory of each tool call's context (and the session scope).
        begin: The session's start events, awaited after the ``start`` chunk.
        resume: The calls a paused turn waited for, settled before the first step.
        budget: The session's usage limits and what it had used when the turn opened.
        cache_book: The session's prompt-cache ledger book (``models/_cache_book.py``),
            shared by the session's turns; ``None``: the run keeps one of its own.
        compactor: The session's compaction, when its agent has one.
    """

    log: TurnLog = field(default_factory=_NoLog)
    calls: CallContexts = field(default_factory=CallContexts)
    begin: Callable[[], Awaitable[None]] | None = None
    resume: Resume | None = None
    budget: SessionBudget | None = None
    cache_book: CacheBook | None = None
    compactor: Compactor | None = None


PLAIN = TurnEnv()
