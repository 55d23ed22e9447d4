"""The generation loop: prepare the step, call the model, run the tools, decide to go on.

One run is one async generator of chunks. It holds no background task of its own: when its
consumer stops (the generator is closed) or its task is cancelled, the ``finally`` blocks
close the litellm stream and cancel the tools still running.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, aclosing, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from ..chunks import (
    Chunk,
    ContextRowChunk,
    ContextSkipped,
    ErrorChunk,
    Finish,
    FinishReason,
    FinishStep,
    Start,
    StartStep,
    Usage,
)
from ..middleware import (
    STEP_OVERRIDE_KEYS,
    ModelMiddleware,
    PrepareStep,
    StepInput,
    WrappedModel,
    call_with_middleware,
    run_step_chain,
)
from ..models._parse import StepParser, map_finish_reason
from ..steps import StepResult, StopCondition, ToolCall
from ..telemetry import Recorder
from ..tools import Tool, ToolContext
from ._tools import Gate, ToolRun, run_tool_calls

__all__ = ["LoopConfig", "RunState", "resolve_contexts", "run_loop"]

Callback = Callable[..., Any]


@dataclass(slots=True, kw_only=True)
class LoopConfig:
    """Everything one run needs; built by ``stream_text`` or the executor."""

    model: str | WrappedModel
    system: str | None
    messages: list[dict[str, Any]]
    tools: dict[str, Tool]
    tools_context: Mapping[str, Any]
    runtime_context: Mapping[str, Any]
    prepare_step: Sequence[PrepareStep] = ()
    stop_when: Sequence[StopCondition] = ()
    middleware: Sequence[ModelMiddleware] = ()
    litellm_params: Mapping[str, Any] = field(default_factory=dict)
    recorder: Recorder
    message_id: str | None = None
    session_id: str | None = None
    gate: Gate | None = None
    make_tool_context: Callable[[ToolCall, Tool, Any], ToolContext] | None = None
    bind: Callable[[], AbstractContextManager[None]] | None = None
    finish_tool: str | None = None
    preamble: Callable[[], AsyncGenerator[Chunk, None]] | None = None
    on_chunk: Callback | None = None
    on_step_finish: Sequence[Callback] = ()
    on_finish: Callback | None = None
    on_error: Callback | None = None


@dataclass(slots=True)
class RunState:
    """What the run has produced so far (read by the result object)."""

    steps: list[StepResult] = field(default_factory=list)
    response_messages: list[dict[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: FinishReason | None = None
    error: BaseException | None = None
    done: bool = False
    runtime_context: Mapping[str, Any] = field(default_factory=dict)
    output: Any = None


async def _call(fn: Callback | None, *args: Any, bind: Any = None) -> None:
    if fn is None:
        return
    with bind() if bind is not None else nullcontext():
        out = fn(*args)
        if inspect.isawaitable(out):
            await out


def resolve_contexts(tools: Mapping[str, Tool], tools_context: Mapping[str, Any]) -> dict[str, Any]:
    """Each tool's validated, frozen context (raises ToolContextError naming the tool)."""
    return {name: t.resolve_context(tools_context) for name, t in tools.items()}


async def _should_stop(conditions: Sequence[StopCondition], steps: list[StepResult]) -> bool:
    for condition in conditions:
        out = condition(steps)
        if inspect.isawaitable(out):
            out = await out
        if out:
            return True
    return False


def _model_name(model: str | WrappedModel) -> tuple[str, Sequence[ModelMiddleware]]:
    if isinstance(model, WrappedModel):
        return model.model, model.middleware
    return str(model), ()


async def run_loop(
    cfg: LoopConfig, state: RunState, contexts: dict[str, Any]
) -> AsyncGenerator[Chunk, None]:
    """Run the loop, yielding chunks; ``state`` is filled as it goes.

    ``contexts`` are the tools' resolved contexts (validated before the run starts, so that a
    missing context fails before any model call).
    """
    from ..models._litellm import acompletion, translate_error

    rec = cfg.recorder
    emit = cfg.on_chunk
    messages = list(cfg.messages)
    tools_context = cfg.tools_context
    state.runtime_context = cfg.runtime_context
    model_str, _ = _model_name(cfg.model)
    rec.call_started(model=model_str, runtime_context=state.runtime_context, messages=messages)
    try:
        start = Start(message_id=cfg.message_id)
        await _call(emit, start, bind=cfg.bind)
        yield start
        if cfg.preamble is not None:
            # Work left from a paused turn (answered approvals, client tool results).
            async with aclosing(cfg.preamble()) as preamble:
                async for chunk in preamble:
                    await _call(emit, chunk, bind=cfg.bind)
                    yield chunk
        step_number = 0
        forced = False
        while True:
            step_in = StepInput(
                step_number=step_number,
                steps=list(state.steps),
                messages=list(messages),
                model=cfg.model,
                runtime_context=state.runtime_context,
                tools_context=tools_context,
                session_id=cfg.session_id,
                forced_completion=forced,
            )
            with cfg.bind() if cfg.bind is not None else nullcontext():
                overrides = await run_step_chain(cfg.prepare_step, step_in)
            state.runtime_context = step_in.runtime_context
            if step_in.tools_context is not tools_context:
                tools_context = step_in.tools_context
                contexts = resolve_contexts(cfg.tools, tools_context)
            model_str, model_mw = _model_name(step_in.model)
            params = _request_params(cfg, step_in, overrides, contexts, forced=forced)

            start_step = StartStep(step_number=step_number)
            await _call(emit, start_step, bind=cfg.bind)
            yield start_step
            rows = [c.row for c in step_in.emitted if isinstance(c, ContextRowChunk)]
            skipped = [c for c in step_in.emitted if isinstance(c, ContextSkipped)]
            for chunk in step_in.emitted:
                await _call(emit, chunk, bind=cfg.bind)
                yield chunk
            rec.step_started(
                step_number=step_number,
                model=model_str,
                params=params,
                runtime_context=state.runtime_context,
                context_rows=rows,
                skipped=skipped,
            )

            parser = StepParser(step_number)

            async def send(**final: Any) -> Any:
                rec.request_sent(final)  # after middleware: what is really sent
                return await acompletion(**final)

            stream = await call_with_middleware(send, (*cfg.middleware, *model_mw), params)
            try:
                first = True
                async for raw in stream:
                    if first:
                        rec.first_chunk()
                        first = False
                    for chunk in parser.feed(raw):
                        if emit is not None:
                            await _call(emit, chunk, bind=cfg.bind)
                        yield chunk
            except Exception as exc:
                raise translate_error(exc) from exc
            finally:
                close = getattr(stream, "aclose", None)
                if close is not None:
                    await close()
            closing, calls = parser.finish()
            for chunk in closing:
                await _call(emit, chunk, bind=cfg.bind)
                yield chunk

            finish_reason = map_finish_reason(parser.finish_reason)
            if calls and finish_reason == "stop":
                finish_reason = "tool-calls"
            assistant = parser.assistant_message(calls)
            partial = StepResult(
                step_number=step_number,
                text="".join(parser.text),
                reasoning="".join(parser.reasoning),
                tool_calls=calls,
                tool_results=[],
                finish_reason=finish_reason,
                usage=parser.usage,
                response_model=parser.response_model,
            )
            rec.step_finished(step=partial)

            run = ToolRun(results=[], messages=[])
            if calls:
                tool_chunks = run_tool_calls(
                    calls,
                    tools=cfg.tools,
                    contexts=contexts,
                    gate=cfg.gate,
                    make_context=cfg.make_tool_context or _plain_context,
                    recorder=rec,
                    run=run,
                    bind=cfg.bind,
                )
                # aclosing: if this run is closed mid-way, the tools still running are
                # cancelled now, not whenever the inner generator is collected.
                async with aclosing(tool_chunks):
                    async for chunk in tool_chunks:
                        await _call(emit, chunk, bind=cfg.bind)
                        yield chunk

            step_messages = [assistant, *run.messages]
            step = replace(
                partial,
                tool_results=run.results,
                response_messages=step_messages,
                runtime_context=state.runtime_context,
            )
            state.steps.append(step)
            state.response_messages.extend(step_messages)
            state.usage = state.usage + parser.usage
            state.finish_reason = finish_reason
            # A `messages` override applies to its step only: the conversation goes on from
            # the loop's own messages.
            messages = [*messages, *step_messages]
            for hook in cfg.on_step_finish:
                await _call(hook, step, bind=cfg.bind)
            finish_step = FinishStep(
                step_number=step_number,
                finish_reason=finish_reason,
                usage=parser.usage,
                response_model=parser.response_model,
            )
            await _call(emit, finish_step, bind=cfg.bind)
            yield finish_step

            finished = _finish_output(cfg.finish_tool, step)
            if finished is not _NOT_FINISHED:
                state.output = finished
                break
            if forced or not calls or step.pending:
                break
            if await _should_stop(cfg.stop_when, state.steps):
                if cfg.finish_tool is None:
                    break
                forced = True
            step_number += 1

        finish = Finish(finish_reason=state.finish_reason or "stop", usage=state.usage)
        state.done = True
        rec.call_finished(
            steps=state.steps,
            finish_reason=finish.finish_reason,
            usage=state.usage,
            text=state.steps[-1].text,
        )
        await _call(cfg.on_finish, state, bind=cfg.bind)
        await _call(emit, finish, bind=cfg.bind)
        yield finish
    except Exception as exc:
        error = translate_error(exc)
        state.error = error
        state.finish_reason = "error"
        state.done = True
        rec.call_failed(error)
        await _call(cfg.on_error, error, bind=cfg.bind)
        chunk = ErrorChunk(error=error)
        await _call(emit, chunk, bind=cfg.bind)
        yield chunk
    finally:
        if not state.done:
            # Closed by the consumer or cancelled: end the telemetry call as aborted.
            rec.call_failed(asyncio.CancelledError("the run was cancelled"))


def _request_params(
    cfg: LoopConfig,
    step: StepInput,
    overrides: Mapping[str, Any],
    contexts: Mapping[str, Any],
    *,
    forced: bool,
) -> dict[str, Any]:
    """The ``litellm.acompletion`` params of one model call."""
    system = overrides.get("system", cfg.system)
    active = overrides.get("active_tools")
    offered = [t for name, t in cfg.tools.items() if active is None or name in active]
    params: dict[str, Any] = {**cfg.litellm_params}
    # Litellm params from prepare_step apply to this call only.
    params.update({k: v for k, v in overrides.items() if k not in STEP_OVERRIDE_KEYS})
    params["model"] = _model_name(step.model)[0]
    params["messages"] = ([{"role": "system", "content": system}] if system else []) + step.messages
    params["stream"] = True
    params.setdefault("stream_options", {"include_usage": True})
    if offered:
        params["tools"] = [t.schema(contexts[t.name]) for t in offered]
    if "tool_choice" in overrides:
        params["tool_choice"] = overrides["tool_choice"]
    if forced:
        # Forced completion: the model must call the finish tool now.
        params["tool_choice"] = {"type": "function", "function": {"name": cfg.finish_tool}}
    return params


_NOT_FINISHED = object()


def _finish_output(finish_tool: str | None, step: StepResult) -> Any:
    """The finish tool's output if ``step`` called it successfully, else ``_NOT_FINISHED``."""
    if finish_tool is not None:
        for result in step.tool_results:
            if result.tool_name == finish_tool and result.status == "output":
                return result.output
    return _NOT_FINISHED


def _plain_context(call: ToolCall, tool: Tool, context: Any) -> ToolContext:
    return ToolContext(context=context, tool_call_id=call.id, tool_name=tool.name)
