"""What a finished step records: its tool calls, their results, text, usage."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ._cache_ledger import CacheLedger
from ._step_parts import DataChunk, FinishReason, SourceUrl, Usage

if TYPE_CHECKING:
    from .tools import Tool

__all__ = [
    "ModelCallPerformance",
    "StepCompaction",
    "StepPerformance",
    "StepResult",
    "StopCondition",
    "ToolCall",
    "ToolResult",
    "ToolServer",
    "ToolStatus",
    "has_tool_call",
    "should_stop",
    "step_count_is",
    "tool_result_from",
    "with_origin",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call the model made (``input`` is the parsed JSON, or the raw text if invalid).

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Weather in Paris?", tools=[get_weather])
        for step in await result.steps():
            for call in step.tool_calls:                # the calls the model asked for
                print(call.id, call.name, call.input, call.arguments)
    """

    id: str
    name: str
    input: Any
    arguments: str


ToolStatus = Literal["output", "error", "not_executed", "denied", "pending"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """How a tool call ended.

    ``status`` is ``"output"`` (ran), ``"error"`` (invalid input or the body raised),
    ``"not_executed"`` (the tool gate refused it; ``reason`` says why), ``"denied"`` (an
    approval said no) or ``"pending"`` (waiting for an approval or a client's answer).

    The result of an MCP server's tool also says where the tool lives: ``server`` is the
    server's name and ``server_tool`` the tool's own name on it (``tool_name`` is the name
    the model was offered, ``{prefix}__{tool}``); both are ``None`` for any other tool.

    ``output`` is the tool's whole output; ``cut_bytes`` says how many bytes of it the model's
    copy lacks (a result over ``max_tool_result_bytes``: the model read its start and a notice).

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Weather in Paris?", tools=[get_weather])
        for step in await result.steps():
            for tool_result in step.tool_results:
                r = tool_result
                print(r.tool_name, r.status, r.output, r.error)
    """

    tool_call_id: str
    tool_name: str
    status: ToolStatus
    output: Any = None
    error: str | None = None
    reason: str | None = None
    server: str | None = None
    server_tool: str | None = None
    cut_bytes: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallPerformance:
    """How fast one model call answered (``on_model_call_end``, ``StepResult.performance``).

    Attributes:
        response_time: Seconds from the request to the stream's end (retries included).
        time_to_first_chunk: Seconds from the request to the first content-bearing chunk
            (``None`` when none came).
        output_tokens_per_second: Output tokens over the time after the first chunk
            (``None`` when it cannot be told).
        effective_total_tokens_per_second: Output tokens over the whole response time.
        longest_gap: The longest silence between two content chunks, in seconds.
        median_gap: The median of those silences.
        read_path: Who read the stream: ``"direct"`` (helix, from the provider's HTTP body)
            or ``"litellm"`` (litellm's stream wrapper: a callback, a cache, model
            middleware, or a provider without a direct reader; README, "Performance");
            ``None`` when no stream was opened.

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        for step in await result.steps():
            if step.performance is not None and step.performance.model is not None:
                model = step.performance.model           # a ModelCallPerformance
                print(model.time_to_first_chunk, model.longest_gap, model.read_path)
    """

    response_time: float
    time_to_first_chunk: float | None = None
    output_tokens_per_second: float | None = None
    effective_total_tokens_per_second: float | None = None
    longest_gap: float = 0.0
    median_gap: float = 0.0
    read_path: Literal["direct", "litellm"] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepPerformance:
    """Where one step's time went (``on_step_end``, ``StepResult.performance``).

    Attributes:
        step_time: Seconds from the step's start to its end.
        model_time: Seconds in the model call.
        tool_time: Seconds running the step's tools.
        model: The model call's own figures.

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Hi")
        for step in await result.steps():
            if step.performance is not None:
                p = step.performance
                print(p.step_time, p.model_time, p.tool_time)
    """

    step_time: float
    model_time: float
    tool_time: float
    model: ModelCallPerformance | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCompaction:
    """The compaction that ran before a step's model call (``StepResult.compaction``): its
    summarizer call, reported apart from the step's own ``usage`` (the run's total counts
    both).

    Attributes:
        model: The summarizer's model.
        request_tokens: The triggering request's input tokens, as litellm counted them.
        usage: The summarizer call's usage (its cache reads included).
        summary_seq: The seq of the summary row it appended; ``None`` when it failed.
        error: Why it failed (the session was left as it was), or ``None``.

    Example::

        result = executor.run(agent, "s1", "And the next order?")
        for step in await result.steps():
            if step.compaction is not None:
                print(step.compaction.model, step.compaction.usage.cached_input_tokens)
    """

    model: str
    request_tokens: int
    usage: Usage = field(default_factory=Usage)
    summary_seq: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepResult:
    """One model call and the tool calls it made.

    Besides its text, calls, results and usage, a step records what it showed a chat UI that
    its messages do not hold: ``sources`` (the sources the model cited, once each) and
    ``data`` (the ``data-*`` parts its tools wrote with ``ctx.write_data``, transient ones
    left out), in the order they were streamed; ``performance`` where its time went
    (:class:`StepPerformance`; not compared: two runs of one step differ in it); ``cache``
    what the model call did with the provider's prompt cache (:class:`~helix_stream.CacheLedger`:
    tokens read and written, the first segment that differs from the session's previous
    request, the provider's miss reason, each breakpoint's lifetime; ``None`` for a step that
    made no model call; not compared either);
    ``compaction`` the compaction that ran before its model call, if one did
    (:class:`StepCompaction`).

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Weather in Paris?", tools=[get_weather])
        for step in await result.steps():                # one StepResult per model call
            print(step.step_number, step.finish_reason, step.text, step.usage.total_tokens)
    """

    step_number: int
    text: str
    reasoning: str
    tool_calls: list[ToolCall]
    tool_results: list[ToolResult]
    finish_reason: FinishReason
    usage: Usage
    response_model: str | None
    response_messages: list[dict[str, Any]] = field(default_factory=list)
    runtime_context: Any = None
    sources: list[SourceUrl] = field(default_factory=list)
    data: list[DataChunk] = field(default_factory=list)
    # Timing differs between two runs of the same step: not part of what a step is.
    performance: StepPerformance | None = field(default=None, compare=False, repr=False)
    # What the cache did depends on the calls before it (and the provider): not compared.
    cache: CacheLedger | None = field(default=None, compare=False, repr=False)
    compaction: StepCompaction | None = None

    @property
    def pending(self) -> list[ToolResult]:
        """The calls waiting for an approval or a client's answer."""
        return [r for r in self.tool_results if r.status == "pending"]


StopCondition = Callable[[Sequence[StepResult]], bool | Awaitable[bool]]
"""A stop condition: called with the steps so far, true stops the loop (sync or async).
``stop_when=`` takes one or a list (any stops), e.g. ``lambda steps: len(steps) >= 3``."""


async def should_stop(conditions: Sequence[StopCondition], steps: Sequence[StepResult]) -> bool:
    """Whether any of ``conditions`` (sync or async) says the run stops after ``steps``.

    Example::

        from helix_stream.steps import should_stop

        steps = await hs.stream_text(model="helix/demo", prompt="Hi").steps()
        assert await should_stop([hs.step_count_is(1)], steps)
    """
    for condition in conditions:
        out = condition(steps)
        if inspect.isawaitable(out):
            out = await out
        if out:
            return True
    return False


def step_count_is(count: int) -> StopCondition:
    """Stop once ``count`` steps have run.

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Hi", tools=[get_weather],
                                stop_when=hs.step_count_is(5))
    """

    def condition(steps: Sequence[StepResult]) -> bool:
        return len(steps) >= count

    condition.__name__ = f"step_count_is({count})"
    return condition


def has_tool_call(name: str) -> StopCondition:
    """Stop after a step in which the model called the tool ``name``.

    Example::

        result = hs.stream_text(model="helix/demo", prompt="Fill in the form", tools=[submit],
                                stop_when=[hs.has_tool_call("submit"), hs.step_count_is(10)])
    """

    def condition(steps: Sequence[StepResult]) -> bool:
        return bool(steps) and any(call.name == name for call in steps[-1].tool_calls)

    condition.__name__ = f"has_tool_call({name!r})"
    return condition


def tool_result_from(result: ToolResult, tool: Tool | ToolServer) -> Any | None:
    """The output of ``tool`` in ``result``, or ``None`` when the result is not that tool's
    output (another tool's result, an error, a call that did not run or waits).

    What a hook uses to pick one tool's results out of all of them::

        for step in await result.steps():
            for tool_result in step.tool_results:
                weather = hs.tool_result_from(tool_result, get_weather)
                if weather is not None:
                    print(weather["temperature"])

    The output is the value the tool returned, as the result carries it: a tool that returns
    a pydantic model has its JSON form here (``Weather.model_validate(weather)`` gives the
    model back). A tool that returned ``None`` gives ``None`` either way: check
    ``result.status`` and ``result.tool_name`` when that matters.

    Given an MCP server (``hs.MCPServer``) instead of a tool, it gives the output of any of
    that server's tools (``result.server_tool`` says which one) and ``None`` for any other.

    Args:
        result: A tool result (``step.tool_results``, or a hook event's).
        tool: The tool to match: by name, the name the model calls it by; or an MCP server,
            matched by its name.
    """
    from .tools import Tool

    if not isinstance(result, ToolResult):
        raise TypeError(f"tool_result_from() needs a ToolResult, not {type(result).__name__}")
    if result.status != "output":
        return None
    if isinstance(tool, Tool):
        return result.output if result.tool_name == tool.name else None
    return result.output if result.server is not None and result.server == tool.name else None


class ToolServer(Protocol):
    """What :func:`tool_result_from` reads of a tool server (``hs.MCPServer``): its name.

    Example::

        from helix_stream.steps import ToolServer

        server: ToolServer = hs.MCPServer.stdio("python", ["weather_server.py"], name="weather")
        for step in await result.steps():
            for tool_result in step.tool_results:
                output = hs.tool_result_from(tool_result, server)   # any of the server's tools
    """

    @property
    def name(self) -> str: ...


def with_origin(result: ToolResult, tool: Tool | None) -> ToolResult:
    """``result`` saying which server's tool made it, when ``tool`` is an MCP server's.

    Example::

        from helix_stream.steps import with_origin

        for step in await result.steps():
            for tool_result in step.tool_results:
                tagged = with_origin(tool_result, get_weather)   # not an MCP server's tool:
                assert tagged.server is None                     # unchanged
    """
    origin = tool.origin if tool is not None else None
    if origin is None or result.server is not None:
        return result
    return replace(result, server=origin[0], server_tool=origin[1])
