"""Setting a run up: check what it is asked (:func:`setup_run`), then build its config once
(:func:`loop_config`).

A run is a :class:`LoopCall` (what its caller asks: the model, the system prompt, the tools,
the answer's shape) and its :class:`~helix_stream.loop._options.LoopOptions`. :func:`setup_run`
refuses, before anything is sent or written, what cannot run: a misplaced or unsendable litellm
param, a retry count that is not one, an ``output`` that is not a pydantic model, a tool
context that is missing or invalid, a telemetry filter naming a tool the call does not have.
What it checked (:class:`RunCheck`) is set up once per run by :func:`finish_setup` (its
tools, when its sources are resolved later, as an agent's MCP servers are at its turn; the
telemetry recorder) and then made into the run's
:class:`~helix_stream.loop._config.LoopConfig` by :func:`loop_config`, with what only the
run's session knows: the conversation so far, the message id, the session itself. A plain
``stream_text`` call does both at once; an executor turn checks in ``Executor.run`` and
builds the config once it has read its session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel

from .._auth_strategy import strategies_by_name
from .._result_size import check_result_limit
from .._timeout import as_timeout
from .._transform import as_transforms
from ..errors import InvalidRequestError
from ..middleware import WrappedModel
from ..models._cache import check_prompt_cache
from ..models._output import check_output_schema
from ..models._retry import RetryPolicy
from ..steps import StopCondition, step_count_is
from ..telemetry import Recorder
from ..tools import FINISH_TOOL_NAME, Tool, finish_tool, resolve_contexts, tools_by_name
from ._config import LoopConfig, as_tuple
from ._env import PLAIN, TurnEnv
from ._options import LoopOptions
from ._params import check_known, check_params

__all__ = [
    "DEFAULT_MAX_STEPS",
    "LoopCall",
    "RunCheck",
    "RunSetup",
    "check_run",
    "finish_setup",
    "loop_config",
    "setup_run",
]

DEFAULT_MAX_STEPS = 20

# The keywords of stream_text/generate_text that are the call's own, not run options.
CALL_KEYWORDS = ("model", "messages", "prompt", "system", "tools", "output")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopCall:
    """What a run is asked, besides its options.

    Attributes:
        operation: ``"stream_text"``, ``"generate_text"`` or ``"invoke_agent"`` (the name of
            telemetry's call span).
        model: A litellm model string or a wrapped model.
        system: The system prompt.
        tools: A list of tools or a ``{name: Tool}`` dict.
        output: The pydantic model of a structured answer.
        output_mode: ``"auto"`` (per run: the provider's JSON schema where supported, the
            finish tool otherwise) or ``"tool"`` (always the finish tool: an Agent).
        stop_when: Stop conditions of the caller's own (an agent's ``max_steps``), besides
            the options'.
        agent_name: The agent's name, for telemetry.
        conversation_id: The session id.
        where: Where the litellm params came from (for the message of a refused one).
    """

    operation: str
    model: str | WrappedModel
    system: str | None = None
    tools: Sequence[Tool] | Mapping[str, Tool] | None = None
    output: type[BaseModel] | None = None
    output_mode: Literal["auto", "tool"] = "auto"
    stop_when: tuple[StopCondition, ...] = ()
    agent_name: str | None = None
    conversation_id: str | None = None
    where: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCheck:
    """A run's call and options, checked (see :func:`check_run`), with what checking made.

    Attributes:
        call: The call.
        options: The options (``prompt_cache`` never ``None``).
        tools: The tools by name, with the finish tool of a structured answer.
        tools_context: The raw per-tool contexts.
        contexts: Each tool's validated context.
        runtime_context: The runtime context the run starts with.
        finish_tool: The tool whose successful call ends the run, if any.
        output: The checked pydantic model of a structured answer.
        where: Where the litellm params came from.
    """

    call: LoopCall
    options: LoopOptions
    tools: dict[str, Tool]
    tools_context: dict[str, Any]
    contexts: dict[str, Any]
    runtime_context: dict[str, Any]
    finish_tool: str | None
    output: type[BaseModel] | None
    where: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSetup(RunCheck):
    """A checked run with its tools resolved and its telemetry: made once per run (per turn).

    Attributes:
        recorder: The run's telemetry.
    """

    recorder: Recorder


def check_run(call: LoopCall, options: LoopOptions) -> RunCheck:
    """Check a run before anything is sent or written (see the module docstring); the
    telemetry filter is checked by :func:`finish_setup`, once every tool is known.

    Raises:
        TypeError: a keyword that is neither a run option nor a litellm param.
        InvalidRequestError: a litellm param that is misplaced or cannot be sent, a retry
            count, an ``output`` or a ``prompt_cache`` that is wrong, two different auth
            strategies of one name.
        ToolContextError: a tool's context is missing or invalid.
    """
    where = call.where or f"{call.operation}()"
    check_params(options.settings, where=where)
    check_known(options.settings, where=where, model=call.model, own=CALL_KEYWORDS)
    RetryPolicy(max_retries=options.max_retries)  # InvalidRequestError for a wrong count
    if options.prompt_cache is None:  # a caller's explicit None: the default
        options = replace(options, prompt_cache="auto")
    check_prompt_cache(options.prompt_cache)
    check_result_limit(options.max_tool_result_bytes, argument="max_tool_result_bytes")
    options = replace(options, timeout=as_timeout(options.timeout))  # InvalidRequestError
    as_transforms(options.transform)  # InvalidRequestError for one that is not a function
    tools = tools_by_name(call.tools)
    strategies_by_name(tools)  # one name, one strategy: tokens are kept by name
    output, finish = call.output, None
    if output is not None:
        output, tools = _with_output(output, tools, options.settings)
        finish = FINISH_TOOL_NAME
    tools_context = dict(options.tools_context or {})
    return RunCheck(
        call=call,
        options=options,
        tools=tools,
        tools_context=tools_context,
        # Fails here, before any model call, naming the tool whose context is missing.
        contexts=resolve_contexts(tools, tools_context),
        runtime_context=dict(options.runtime_context or {}),
        finish_tool=finish,
        output=output,
        where=where,
    )


def finish_setup(check: RunCheck, tools: Mapping[str, Tool] | None = None) -> RunSetup:
    """The run's setup: ``check`` with ``tools`` (what its tool sources gave, when they were
    resolved after the check: their strategies and contexts are checked here) and its
    telemetry recorder.

    Raises:
        InvalidRequestError: the telemetry filter names a tool the run does not have; two
            different auth strategies of one name.
        ToolContextError: a tool's context is missing or invalid.
    """
    from ..telemetry import recorder_for

    if tools is not None:
        check = replace(check, tools=dict(tools))
        strategies_by_name(check.tools)
        check = replace(check, contexts=resolve_contexts(check.tools, check.tools_context))
    call, options = check.call, check.options
    recorder = recorder_for(
        options.telemetry,
        operation=call.operation,
        tools=check.tools,
        runtime_context=check.runtime_context,
        tools_context=check.tools_context,
        agent_name=call.agent_name,
        conversation_id=call.conversation_id,
    )
    fields = {name: getattr(check, name) for name in RunCheck.__dataclass_fields__}
    return RunSetup(**fields, recorder=recorder)


def setup_run(call: LoopCall, options: LoopOptions) -> RunSetup:
    """Check a run and set it up (:func:`check_run`, then :func:`finish_setup`).

    Raises:
        InvalidRequestError, ToolContextError: as :func:`check_run` and :func:`finish_setup`.
    """
    return finish_setup(check_run(call, options))


def loop_config(
    setup: RunSetup,
    *,
    messages: Iterable[dict[str, Any]],
    message_id: str | None = None,
    env: TurnEnv = PLAIN,
) -> LoopConfig:
    """The run's config: ``setup`` with the conversation so far, the id the ``start`` chunk
    announces and the turn environment its session hands it. Checks nothing more (``setup``
    was checked)."""
    call = setup.call
    return LoopConfig(
        options=setup.options,
        model=call.model,
        system=call.system,
        messages=tuple(messages),
        tools=setup.tools,
        tools_context=setup.tools_context,
        contexts=setup.contexts,
        runtime_context=setup.runtime_context,
        recorder=setup.recorder,
        stop_when=(*call.stop_when, *as_tuple(setup.options.stop_when))
        or (step_count_is(DEFAULT_MAX_STEPS),),
        message_id=message_id,
        session_id=call.conversation_id,
        finish_tool=setup.finish_tool,
        output=setup.output,
        output_mode=call.output_mode,
        where=setup.where,
        env=env,
    )


def _with_output(
    output: type[BaseModel], tools: dict[str, Tool], litellm_params: Mapping[str, Any]
) -> tuple[type[BaseModel], dict[str, Tool]]:
    """The checked ``output`` model and the tools with its finish tool (unless the caller
    brought one of that name)."""
    output = check_output_schema(output)
    if "response_format" in litellm_params:
        raise InvalidRequestError(
            "output= and response_format= ask for the answer's shape twice: pass one "
            "(output= takes a pydantic model and returns an instance in result.output)."
        )
    if FINISH_TOOL_NAME in tools:
        return output, tools
    return output, {**tools, FINISH_TOOL_NAME: finish_tool(output)}
