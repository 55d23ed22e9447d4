"""The generation loop: prepare the step, call the model, run the tools, decide to go on.

One run is one async generator of chunks. It holds no background task of its own: when its
consumer stops (the generator is closed) or its task is cancelled, the ``finally`` blocks
close the litellm stream and cancel the tools still running. Results travel in the chunks:
each ``finish-step`` carries its :class:`~helix_stream.StepResult`, ``finish`` the total usage
and the finish tool's output, ``error`` the exception. What the run needs of its session comes
in one value, its turn environment (``cfg.env``, ``loop/_env.py``): before the first step it
settles the calls a paused turn waited for (``loop/_resume.py``), each step commits its context
and persists its result through the environment's log, and however the run ends, the log is
told last (``TurnLog.end``).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from .._event_stream import (
    RunAborted,
    RunFailed,
    RunFinished,
    RunStarted,
    StepEnded,
    StepStarted,
)
from .._timeout import NO_CLOCK, RunClock
from .._transform import aclose_stream, apply_transforms
from ..chunks import (
    Chunk,
    ErrorChunk,
    FinishStep,
    Start,
    StartStep,
)
from ..context import model_message
from ..models._litellm import ensure_litellm, translate_error
from ..models._output import OutputSpec
from ..prepare_step import StepInput, run_step_chain
from ..steps import StepResult
from ..tools import resolve_contexts
from ._answer import run_output_spec
from ._budget import RunBudget
from ._config import LoopConfig
from ._decide import FORCE, STOP, next_move, run_finish
from ._env import Resumed, RunEnd, StepCommit
from ._request import Prepared, cache_scope, model_name, prepared_call, request_params
from ._resume import ResumeStep
from ._run_events import run_event_stream
from ._step import step_performance, step_result
from ._step_events import model_call_ended, model_chunks, not_executed
from ._stream_retry import StepCall, step_call
from ._summarize import compact
from ._tool_runner import tool_calls

__all__ = ["run_event_stream", "run_loop"]


async def run_loop(cfg: LoopConfig) -> AsyncGenerator[Chunk, None]:
    """Run the loop, yielding its chunks; each goes to ``on_chunk`` first (the one place).
    Last, however the run ended, its session is told how (``TurnLog.end``)."""
    run = _Run(cfg)
    events = run.events
    on_chunk = events.on_chunk  # read once: a run without it does nothing per chunk
    try:
        async with aclosing(run.chunks()) as source:
            # After the loop, before every consumer (on_chunk, the result, the UI stream).
            chunks = apply_transforms(source, cfg.transform)
            try:
                async for chunk in chunks:
                    if on_chunk is not None:
                        await events.chunk(chunk)
                    yield chunk
            finally:
                if chunks is not source:
                    await aclose_stream(chunks)
    finally:
        await cfg.env.log.end(run.how_it_ended())


class _Run:
    """One run's progress: the loop's own messages, steps, usage and carried contexts."""

    def __init__(self, cfg: LoopConfig) -> None:
        self.cfg = cfg
        self.messages = list(cfg.messages)
        self.steps: list[StepResult] = []
        # The run's usage, its limits and its session's (loop/_budget.py).
        self.budget = RunBudget(run=cfg.options.usage_limits, session=cfg.env.budget)
        self.runtime_context = cfg.runtime_context
        self.tools_context = cfg.tools_context
        self.contexts = cfg.contexts
        self.output: Any = None
        self.output_spec: OutputSpec | None = None  # decided when the run starts
        self.next = STOP  # set by each step: go on, force the finish tool, or stop
        self.error: BaseException | None = None  # the run's error, once it failed
        self.finished = False  # the finish chunk was made
        self.unfinished: StepCall | None = None  # the model call of the step in progress
        self.clock = NO_CLOCK  # the run's total limit, set when it starts
        self.scope = cfg.env.calls.scope  # the session binding around user code
        self.inactive: frozenset[str] = frozenset()  # the tool gate, as the last commit said
        self.resumed: Resumed | None = None  # what settling a paused turn's calls produced
        self.first: StepCommit | None = None  # the first call's commit, when made early
        events = cfg.events
        if events is None:  # no session made the stream: the run makes its own
            events = run_event_stream(
                cfg.recorder, cfg.callbacks, session_id=cfg.session_id, scope=cfg.env.calls.scope
            )
        self.events = events

    def how_it_ended(self) -> RunEnd:
        unfinished = self.unfinished.text if self.unfinished is not None else ""
        return RunEnd(error=self.error, finished=self.finished, unfinished_text=unfinished)

    async def chunks(self) -> AsyncGenerator[Chunk, None]:
        cfg, events = self.cfg, self.events
        # Before any span or clock starts: litellm's import (seconds) is no model call's time.
        await ensure_litellm()
        ended = False
        try:
            await events.emit(
                RunStarted(
                    session_id=cfg.session_id,
                    model=model_name(cfg.model)[0],
                    runtime_context=self.runtime_context,
                    messages=self.messages,
                    system=cfg.system,
                )
            )
            self.clock = RunClock(cfg.timeout)  # the total runs from here
            self.output_spec = await run_output_spec(cfg)
            yield Start(message_id=cfg.message_id)
            if cfg.env.begin is not None:
                await cfg.env.begin()
            async with aclosing(self._resume()) as resume_chunks:
                async for chunk in resume_chunks:
                    yield chunk
            step_number, forced = 0, False
            while not await self._paused():
                async with aclosing(self._step(step_number, forced)) as step_chunks:
                    async for chunk in step_chunks:
                        yield chunk
                if self.next == STOP:
                    break
                forced = self.next == FORCE
                step_number += 1
            finish, result = run_finish(
                cfg, self.output_spec, self.steps, self.output, self.budget.usage
            )
            self.output = finish.output
            ended = True
            end = RunFinished(
                session_id=cfg.session_id, result=result, finish_reason=finish.finish_reason
            )
            await events.emit(end)
            self.finished = True
            yield finish
        except Exception as exc:
            ended = True
            yield await self._fail(exc)
        finally:
            if not ended:  # closed by the consumer or cancelled: the call was aborted
                await events.emit(RunAborted(session_id=cfg.session_id, steps=list(self.steps)))

    async def _resume(self) -> AsyncGenerator[Chunk, None]:
        """The resume step: settle the calls a paused turn waited for (``loop/_resume.py``)."""
        resume = self.cfg.env.resume
        if resume is None:
            return
        step = ResumeStep(
            resume,
            lambda calls, signed_in: tool_calls(
                self.cfg,
                calls,
                0,
                contexts=self.contexts,
                clock=self.clock,
                events=self.events,
                approved=frozenset(c.id for c in calls),
                signed_in=signed_in,
                # After a new message nothing can wait: the conversation has moved on.
                can_park=not resume.moved_on,
            ),
        )
        async with aclosing(step.chunks()) as chunks:
            async for chunk in chunks:
                yield chunk
        self.resumed = step.outcome()

    async def _paused(self) -> bool:
        """Settling may leave a call waiting again (an approved call that needs a sign-in):
        then the first commit pauses the turn instead, and no model call is made."""
        resumed = self.resumed
        if self.steps or resumed is None or not resumed.parked:
            return False
        self.first = await self._commit(0)
        return self.first.paused

    async def _commit(self, step_number: int, *, retry: bool = False) -> StepCommit:
        """The session's commit before a model call; its switched-off tools gate the calls."""
        resumed = None if retry or step_number else self.resumed
        commit = await self.cfg.env.log.commit(step_number, retry=retry, resumed=resumed)
        self.inactive = commit.inactive
        return commit

    async def _step(self, step_number: int, forced: bool) -> AsyncGenerator[Chunk, None]:
        """One step's chunks; sets :attr:`next`, what the loop does after it."""
        cfg, events, sid = self.cfg, self.events, self.cfg.session_id
        self.clock.check()  # the total limit, between steps
        self.budget.check()  # a call refused anyway commits no context (loop/_budget.py)
        began = time.perf_counter()
        if events.wants("step-started"):
            await events.emit(StepStarted(session_id=sid, step_number=step_number))
        prepared, compacted = await compact(self, step_number, forced)
        await self.budget.check_request(prepared.params)  # nothing sent past a limit
        yield StartStep(step_number=step_number)
        for chunk in (*prepared.context.chunks, *compacted.chunks):
            yield chunk
        call = self._model_call(step_number, prepared)
        self.unfinished = call
        called = model_chunks(events, sid, step_number, call, prepared, self.runtime_context)
        async with aclosing(called) as model_call_chunks:
            async for chunk in model_call_chunks:
                yield chunk
        model = replace(call.result(), compaction=compacted.report)
        tools = tool_calls(
            cfg,
            model.calls,
            step_number,
            contexts=self.contexts,
            clock=self.clock,
            events=events,
            inactive=self.inactive,
            secrets=model.credentials,
        )
        performance = step_performance(began, call.performance())
        await model_call_ended(
            events, sid, step_number, call, prepared, model, self.runtime_context, performance
        )
        tools_began = time.perf_counter()
        if model.calls:
            # aclosing: if this run is closed mid-way, the tools still running are cancelled
            # now, not whenever the inner generator is collected.
            async with aclosing(tools.chunks()) as tool_chunks:
                async for chunk in tool_chunks:
                    yield chunk
        outcome = tools.outcome()
        await not_executed(events, sid, step_number, model.calls, outcome.results, tools.executed)
        performance = step_performance(began, performance.model, time.perf_counter() - tools_began)
        step = step_result(
            step_number,
            model,
            outcome.results,
            [model.assistant, *outcome.messages],
            self.runtime_context,
            data=outcome.data,
            performance=performance,
        )
        self.steps.append(step)
        self.budget = self.budget.after(model.usage + compacted.usage)
        self.messages.extend(call.retry_messages)  # rows of a retried attempt, in log order
        # A `messages` override applies to its step only: the conversation goes on from the
        # loop's own messages, in the form a later turn reads them from the log in, so that
        # their bytes never change between calls.
        self.messages.extend(model_message(m) for m in step.response_messages)
        self.next, self.output = await next_move(
            cfg, self.output_spec, step, self.steps, forced=forced, output=self.output
        )
        final = self.next == STOP
        await cfg.env.log.persist(step, final=final)
        if events.wants("step-ended"):
            ended = StepEnded(session_id=sid, step=step, performance=performance, final=final)
            await events.emit(ended)  # telemetry, hooks and callbacks: one emission
        self.unfinished = None
        yield FinishStep(
            step_number=step_number,
            finish_reason=step.finish_reason,
            usage=step.usage,
            response_model=step.response_model,
            step=step,
        )

    def _model_call(self, step_number: int, prepared: Prepared) -> StepCall:
        return step_call(
            self.cfg,
            prepared.params,
            prepared.middleware,
            cache_scope(self.cfg, step_number, prepared.params, prepared.prompt_cache),
            step_number,
            limits=self.clock.limits.for_step(prepared.timeout),
            clock=self.clock,
            events=self.events,
            commit=lambda: self._commit(step_number, retry=True),
        )

    async def _prepare(self, step_number: int, forced: bool) -> Prepared:
        """Commit the session's context, run the prepare_step chain, build the request."""
        cfg = self.cfg
        context, self.first = self.first or await self._commit(step_number), None
        self.messages.extend(context.messages)
        step_in = StepInput(
            step_number=step_number,
            steps=tuple(self.steps),
            messages=list(self.messages),
            model=cfg.model,
            runtime_context=self.runtime_context,
            tools_context=self.tools_context,
            session_id=cfg.session_id,
            forced_completion=forced,
        )
        # prepare_step and the tools' description functions run in the session scope.
        with self.scope():
            step_in, overrides = await run_step_chain(cfg.prepare_step, step_in)
            self.runtime_context = step_in.runtime_context
            if step_in.tools_context is not self.tools_context:
                self.tools_context = step_in.tools_context
                self.contexts = resolve_contexts(dict(cfg.tools), self.tools_context)
            params = request_params(
                cfg, step_in, overrides, self.contexts, forced=forced, output=self.output_spec
            )
        return prepared_call(cfg, context, step_in, overrides, params)

    async def _fail(self, exc: Exception) -> ErrorChunk:
        error = translate_error(exc)
        self.error = error
        await self.events.emit(RunFailed(session_id=self.cfg.session_id, error=error))
        return ErrorChunk(error=error)
