"""Runs one step's tool calls: the tool gate, input validation, concurrent execution.

A call to a tool the agent does not declare is answered ``tool_unavailable``; a call to a
switched-off tool ``tool_inactive`` (README, "Switching tools, the step_context hook, memory,
approvals"). Neither runs anything of the tool: no body, no approval, no client ask. Every call
still gets a tool message, so the conversation stays valid and the model can carry on.

A call whose tool needs the user to sign in first, in a session that can wait for it, is
*parked* (README, "Tools that act for the user: authorization"): it gets a pending result and
no tool message, like a call waiting for its approval, so the turn pauses after the step;
the session keeps the sign-in and its ``tool-authorization-request`` chunk shows the URL. The
step's other calls finish as usual and keep their results.

A result over its size limit is cut before it becomes the tool message (``_result_size.py``):
the model, the stored log and the UI get the cut text with its notice; ``ToolResult.output``
keeps the whole output for the app.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from .._result_size import cut_content, cut_text
from .._timeout import NO_CLOCK, RunClock, describe_seconds
from .._tool_context import ToolContext
from ..auth._cache import DEFAULT_AUTH, AuthSettings, CallAuth, StepTokens
from ..auth._flow import ParkForSignIn
from ..chunks import (
    Chunk,
    DataChunk,
    ToolApprovalRequest,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputError,
)
from ..errors import describe_validation
from ..steps import ToolCall, ToolResult, with_origin
from ..telemetry import Recorder
from ..telemetry._filters import redact, secret_strings
from ..tools import FINISH_TOOL_NAME, Tool, ToolUnavailable, approval_id
from ._env import PLAIN, CallContexts, Parker
from ._lifecycle import ToolWatch, outcome_of
from ._options import LoopOptions
from ._tool_media import ToolContent, tool_content

__all__ = [
    "NO_TOOL_RUN",
    "ToolCalls",
    "ToolOutcome",
    "ToolRun",
    "not_executed_message",
    "tool_message",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRun:
    """How a run's tool calls run: its limits (``timeout=``, ``max_tool_result_bytes``) and
    its tool callbacks."""

    clock: RunClock = NO_CLOCK
    watch: ToolWatch | None = None
    options: LoopOptions = field(default_factory=LoopOptions)  # its max_tool_result_bytes


NO_TOOL_RUN = ToolRun()


def not_executed_message(call: ToolCall, reason: str) -> str:
    """The tool message content for a call the gate refused (stable bytes)."""
    text = (
        f"The tool {call.name!r} is switched off; the call was not run."
        if reason == "tool_inactive"
        else f"There is no tool named {call.name!r}; the call was not run."
    )
    return json.dumps({"status": "not_executed", "reason": reason, "message": text})


def tool_message(call_id: str, content: ToolContent) -> dict[str, Any]:
    """The OpenAI tool message answering call ``call_id`` (content parts when the tool returned
    an image: ``_tool_media.py``)."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How a step's tool calls ended: results and tool messages, both in call order (never
    completion order: the next request's bytes must not depend on which tool finished first).
    A pending call (approval, client tool) has a result but no message yet. ``data``: the
    data parts the tools wrote that are kept (not transient), in the order they streamed."""

    results: list[ToolResult]
    messages: list[dict[str, Any]]
    data: list[DataChunk]


def _validation_text(call: ToolCall, exc: ValidationError | None) -> str:
    if exc is None:
        return f"Invalid input for tool {call.name!r}: the arguments are not a JSON object."
    return f"Invalid input for tool {call.name!r}: {describe_validation(exc)}"


class ToolCalls:
    """One step's tool calls. Iterate :meth:`chunks`, then read :meth:`outcome`.

    Tools run concurrently; each output is yielded as soon as it is ready. If the consumer
    stops or the task is cancelled, every tool still running is cancelled before
    :meth:`chunks` returns. Calls in ``approved`` run even though their tool needs approval:
    the app said yes (the gate does not apply to them: the caller settled that); a call to
    a tool in ``inactive`` is answered ``tool_inactive``. Each call's ``ctx`` comes from
    ``factory`` (the turn environment's), made inside its scope (the session binding). The
    calls share one per-step token cache, resolved as ``auth`` says; calls in ``signed_in``
    are re-run right after their sign-in. Without ``can_park`` no call parks (the
    conversation has moved on): a miss is an error.
    """

    def __init__(
        self,
        calls: Sequence[ToolCall],
        *,
        tools: Mapping[str, Tool],
        contexts: Mapping[str, Any],
        recorder: Recorder,
        factory: CallContexts = PLAIN.calls,
        inactive: frozenset[str] = frozenset(),
        approved: frozenset[str] = frozenset(),
        secrets: frozenset[str] = frozenset(),
        auth: AuthSettings = DEFAULT_AUTH,
        signed_in: frozenset[str] = frozenset(),
        can_park: bool = True,
        run: ToolRun = NO_TOOL_RUN,
    ) -> None:
        self._calls = list(calls)
        self._watch = run.watch  # lifecycle callbacks (on_tool_call_start/_end)
        self.executed: set[str] = set()  # the calls that ran (their events are sent live)
        self._clock = run.clock  # the run's tool limits (timeout=)
        self._max_bytes = run.options.max_tool_result_bytes
        self._tools = tools
        self._contexts = contexts
        self._recorder = recorder
        self._factory = factory
        self._inactive = inactive
        self._approved = approved
        self._secrets = secrets
        settings = auth
        if signed_in:
            settings = replace(settings, signed_in=settings.signed_in | signed_in)
        if not can_park and settings.parks:
            settings = replace(settings, parks=False, cannot_wait="a new message came meanwhile")
        self._tokens = StepTokens(settings, recorder)
        self._results: dict[str, ToolResult] = {}
        self._contents: dict[str, ToolContent] = {}
        # Data parts the tools write while they run (ctx.write_data), streamed as they come.
        self._written: asyncio.Queue[Chunk] = asyncio.Queue()
        self._kept: list[DataChunk] = []  # the streamed ones that are not transient

    def outcome(self) -> ToolOutcome:
        """Results and tool messages in call order (after :meth:`chunks` has finished)."""
        calls = self._calls
        return ToolOutcome(
            results=[self._results[call.id] for call in calls],
            messages=[
                tool_message(call.id, self._contents[call.id])
                for call in calls
                if call.id in self._contents
            ],
            data=list(self._kept),
        )

    def _settle(self, result: ToolResult, content: ToolContent | None) -> None:
        result = with_origin(result, self._tools.get(result.tool_name))
        self._results[result.tool_call_id] = result
        if content is not None:
            self._contents[result.tool_call_id] = content

    def _screen(self, call: ToolCall) -> tuple[Chunk | None, Any]:
        """Settle a call that must not run now; return its chunk, or ``(None, input)`` to run."""
        tool = self._tools.get(call.name)
        approved = call.id in self._approved
        # An offered tool that cannot run now (``available=False``: its MCP server no longer
        # lists it) is unavailable like an undeclared one.
        reason: Literal["tool_inactive", "tool_unavailable"] | None = (
            "tool_unavailable" if tool is None or not tool.available else None
        )
        # __finish__ can never be switched off (validation refuses it, and a stored switch-off
        # of it is ignored here): forced completion can always call it.
        if (
            reason is None
            and not approved
            and call.name != FINISH_TOOL_NAME
            and call.name in self._inactive
        ):
            reason = "tool_inactive"
        if reason is not None:
            result = ToolResult(
                tool_call_id=call.id, tool_name=call.name, status="not_executed", reason=reason
            )
            self._settle(result, not_executed_message(call, reason))
            return ToolNotExecuted(tool_call_id=call.id, tool_name=call.name, reason=reason), None
        assert tool is not None
        error: ValidationError | None = None
        if isinstance(call.input, dict):
            try:
                return None, tool.input_schema.model_validate(call.input)
            except ValidationError as exc:
                error = exc
        text = _validation_text(call, error)
        result = ToolResult(tool_call_id=call.id, tool_name=call.name, status="error", error=text)
        self._settle(result, text)
        return ToolOutputError(tool_call_id=call.id, error_text=text), None

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        """The chunks of running the calls (see the class docstring)."""
        immediate: list[Chunk] = []
        to_start: list[tuple[ToolCall, Tool, Any]] = []
        for call in self._calls:
            chunk, parsed = self._screen(call)
            if chunk is not None:
                immediate.append(chunk)
                continue
            tool = self._tools[call.name]
            waits = tool.pauses_for
            if waits == "client" or (waits == "approval" and call.id not in self._approved):
                # The run pauses after this step until the app or the client answers.
                self._settle(
                    ToolResult(tool_call_id=call.id, tool_name=call.name, status="pending"), None
                )
                if waits == "approval":
                    immediate.append(
                        ToolApprovalRequest(approval_id=approval_id(call.id), tool_call_id=call.id)
                    )
                continue
            to_start.append((call, tool, parsed))
        tasks = self._start(to_start)
        try:
            for chunk in immediate:
                yield chunk
            async for chunk in self._collect(tasks):
                yield chunk
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    def _start(
        self, to_start: list[tuple[ToolCall, Tool, Any]]
    ) -> dict[asyncio.Task[tuple[ToolResult, ToolContent | None]], ToolCall]:
        # Tasks copy the context they are created in: create them all inside the session
        # binding, with no await in between, so every tool sees its session (and nothing leaks).
        tasks: dict[asyncio.Task[tuple[ToolResult, ToolContent | None]], ToolCall] = {}
        with self._factory.scope():
            for call, tool, parsed in to_start:
                context = self._contexts.get(tool.name)
                tokens = self._tokens.for_call(
                    tool.auth,
                    tool_call_id=call.id,
                    tool_name=tool.name,
                    session=self._factory.session,
                )
                ctx = self._factory.make(
                    call, tool, context, writer=self._written.put_nowait, tokens=tokens
                )
                job = _execute(
                    tool,
                    parsed,
                    _Call(
                        ctx, tokens, self._factory.park, tool.max_result_bytes or self._max_bytes
                    ),
                    call,
                    self._recorder,
                    self._secrets,
                    self._clock.for_tool(call.name),
                )
                if self._watch is not None:
                    job = _watched(job, self._watch, call, approved=call.id in self._approved)
                self.executed.add(call.id)
                task = asyncio.ensure_future(job)
                tasks[task] = call
        return tasks

    async def _collect(
        self, tasks: dict[asyncio.Task[tuple[ToolResult, ToolContent | None]], ToolCall]
    ) -> AsyncGenerator[Chunk, None]:
        order = {call.id: index for index, call in enumerate(self._calls)}
        pending = set(tasks)
        written = asyncio.ensure_future(self._written.get())
        try:
            while pending:
                done, _ = await asyncio.wait(
                    {*pending, written}, return_when=asyncio.FIRST_COMPLETED
                )
                got = written if written in done else None
                # What a tool wrote comes before its output.
                for chunk in self._drain(got):
                    yield chunk
                if got is not None:
                    written = asyncio.ensure_future(self._written.get())
                finished = [task for task in pending if task in done]
                pending.difference_update(finished)
                # In call order among those that finished together (deterministic streams).
                for task in sorted(finished, key=lambda t: order[tasks[t].id]):
                    result, content = task.result()
                    self._settle(result, content)
                    if result.status != "pending":  # a parked call: its sign-in link came
                        yield _output_chunk(result, content)
        finally:
            written.cancel()

    def _drain(self, got: asyncio.Future[Chunk] | None) -> list[Chunk]:
        chunks = [got.result()] if got is not None else []
        while not self._written.empty():
            chunks.append(self._written.get_nowait())
        self._kept.extend(c for c in chunks if isinstance(c, DataChunk) and not c.transient)
        return chunks


def _output_chunk(result: ToolResult, content: ToolContent | None = None) -> Chunk:
    if result.status == "output":
        # A cut result shows what the model read (what a reload of the chat shows too).
        shown = content if result.cut_bytes and content is not None else result.output
        return ToolOutputAvailable(tool_call_id=result.tool_call_id, output=shown)
    if result.status == "not_executed":  # its tool is no longer there (ToolUnavailable)
        return ToolNotExecuted(
            tool_call_id=result.tool_call_id, tool_name=result.tool_name, reason="tool_unavailable"
        )
    if result.cut_bytes and isinstance(content, str):
        return ToolOutputError(tool_call_id=result.tool_call_id, error_text=content)
    return ToolOutputError(tool_call_id=result.tool_call_id, error_text=result.error or "")


@dataclass(frozen=True, slots=True)
class _Call:
    """One running call: its ``ctx``, its share of the step's token cache (``None``: its tool
    has no ``auth=``), where it parks on a sign-in (``None``: nothing can wait) and the most
    bytes of its result or error the model reads (``None``: no limit)."""

    ctx: ToolContext[Any]
    tokens: CallAuth | None
    park: Parker | None
    max_bytes: int | None = None


async def _execute(
    tool: Tool,
    parsed: Any,
    running: _Call,
    call: ToolCall,
    recorder: Recorder,
    secrets: frozenset[str],
    limit: tuple[float | None, float | None] = (None, None),
) -> tuple[ToolResult, ToolContent | None]:
    ctx = running.ctx
    with recorder.tool_call(call=call, tool_context=ctx.context) as handle:
        timer = asyncio.timeout(None if limit[0] is None else max(limit[0], 0.001))
        try:
            async with timer:  # the tool's limit (timeout=): it is cancelled when it fires
                output = await tool.run(parsed, ctx)
            if running.tokens is not None:
                await running.tokens.settle(None)  # a token the tool rejected leaves the store
        except asyncio.CancelledError:
            raise
        except ToolUnavailable:
            result = ToolResult(
                tool_call_id=call.id,
                tool_name=call.name,
                status="not_executed",
                reason="tool_unavailable",
            )
            recorder.tool_finished(handle, result=result)
            return result, not_executed_message(call, "tool_unavailable")
        except TimeoutError as exc:
            if not timer.expired():
                return await _failed(exc, running, call, recorder, secrets, handle)
            text = _timed_out_text(call, limit)
            result = ToolResult(
                tool_call_id=call.id, tool_name=call.name, status="error", error=text
            )
            recorder.tool_finished(handle, result=result, error=exc)
            return result, text
        except Exception as exc:
            return await _failed(exc, running, call, recorder, secrets, handle)
        cut = cut_content(tool_content(output), running.max_bytes)
        if isinstance(output, BaseModel):
            output = output.model_dump(mode="json")
        result = ToolResult(
            tool_call_id=call.id,
            tool_name=call.name,
            status="output",
            output=output,
            cut_bytes=cut.cut_bytes,
        )
        recorder.tool_finished(handle, result=result)
        return result, cut.content


async def _park(
    park: ParkForSignIn,
    running: _Call,
    call: ToolCall,
    recorder: Recorder,
    handle: Any,
) -> tuple[ToolResult, None]:
    """The call waits for a sign-in: the session keeps it, its chunk goes into the stream
    (before the step's other outputs that finish later), and the call's result is pending."""
    assert running.park is not None  # only a run that can park decides to
    chunk = await running.park(park)
    if running.ctx.writer is not None:
        running.ctx.writer(chunk)
    result = ToolResult(tool_call_id=call.id, tool_name=call.name, status="pending")
    recorder.sign_in_required(handle, strategy=park.strategy.name)
    recorder.tool_finished(handle, result=result)
    return result, None


async def _watched(
    job: Coroutine[Any, Any, tuple[ToolResult, ToolContent | None]],
    watch: ToolWatch,
    call: ToolCall,
    *,
    approved: bool,
) -> tuple[ToolResult, ToolContent | None]:
    """``job`` (one tool execution) between its lifecycle events."""
    await watch.start(call)
    began = time.perf_counter()
    result, content = await job
    timed_out = (
        result.status == "error"
        and isinstance(content, str)
        and content.startswith(f"tool {call.name!r} timed out")
    )
    outcome = "timed_out" if timed_out else outcome_of(result)
    await watch.end(call, result, time.perf_counter() - began, outcome, approved=approved)
    return result, content


def _timed_out_text(call: ToolCall, limit: tuple[float | None, float | None]) -> str:
    """The error result of a tool its limit cancelled (the AI SDK's wording)."""
    seconds, own = limit
    if own is not None and seconds is not None and seconds >= own:
        return f"tool {call.name!r} timed out after {describe_seconds(own)}"
    return f"tool {call.name!r} timed out: the run's total time limit was reached"


async def _failed(
    exc: Exception,
    running: _Call,
    call: ToolCall,
    recorder: Recorder,
    secrets: frozenset[str],
    handle: Any,
) -> tuple[ToolResult, ToolContent | None]:
    """The error result of a tool that raised, or its park on a sign-in (no content)."""
    # The text goes to the model, the log and telemetry: never with the tool's own context
    # values (its keys), the call's credentials or its tokens in it.
    hidden = set(secrets) | secret_strings(running.ctx.context, None)
    error: Exception = exc
    tokens = running.tokens
    if tokens is not None:
        decided = await tokens.settle(exc)
        if isinstance(decided, ParkForSignIn):
            return await _park(decided, running, call, recorder, handle)
        error = decided if decided is not None else exc
        hidden |= tokens.secrets
    text = redact(f"Tool {call.name!r} failed: {type(error).__name__}: {error}", hidden)
    shown, cut = cut_text(text, running.max_bytes)  # an MCP isError of 10 MB is an error too
    result = ToolResult(
        tool_call_id=call.id, tool_name=call.name, status="error", error=text, cut_bytes=cut
    )
    recorder.tool_finished(handle, result=result, error=error)
    return result, shown
