"""``Agent``: the definition an :class:`~helix_stream.Executor` runs in a session."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from ._options import LoopOptions
from .context import StepContextLimits
from .middleware import WrappedModel
from .models._cache import check_prompt_cache
from .models._output import check_output_schema
from .models._params import check_params
from .models._retry import RetryPolicy
from .tools import FINISH_TOOL_NAME, Tool, finish_tool, tools_by_name

__all__ = ["Agent", "StepContextLimits"]


@dataclass(slots=True, kw_only=True)
class Agent(LoopOptions):
    """An agent: a system prompt, a model, tools, and how its sessions run.

    The system prompt is fixed for a session (changing it would throw away the provider's
    prompt cache); tell the model something new with context rows instead
    (``executor.add_context``).

    Besides the fields below, an agent takes every run option of
    :func:`~helix_stream.stream_text` as a field — ``tools_context``, ``runtime_context``,
    ``prepare_step`` (run after the built-in context pass), ``stop_when`` (besides
    ``max_steps``), ``telemetry``, ``middleware``, ``router``, ``max_retries``,
    ``prompt_cache``, the callbacks ``on_chunk``, ``on_step_finish``, ``on_finish`` and
    ``on_error`` — and ``settings``, its litellm params. For one turn, an option given to
    ``Executor.run`` wins over the agent's (litellm params merge, the run's over ``settings``).

    Attributes:
        name: Recorded on the session.
        system: The system prompt.
        model: A litellm model string or a :func:`~helix_stream.wrap_model` result.
        tools: A list of tools or a ``{name: Tool}`` dict.
        max_steps: Model calls per turn at most — plus, for an agent with an
            ``output_schema``, the one forced-completion call that follows when the limit is
            reached without ``__finish__`` (so at most ``max_steps + 1`` calls).
        step_context: The step_context hook (README, "Switching tools, the step_context hook,
            memory, approvals").
        step_context_limits: Its limits.
        hooks: ``define_hook`` subscribers.
        memory: A recall function for memory auto-inject.
        output_schema: A pydantic model: the agent finishes by calling ``__finish__`` with it;
            when ``max_steps`` is reached without that, one last call forces it. The run's
            ``result.output`` is an instance of it.
        client_tool_timeout: Seconds a client tool may take to answer; a later answer is
            delivered as a ``late-answer`` notice instead (``None``: no deadline).
        settings: litellm params for every call (temperature, api_base, ...). A keyword that
            is the agent's own (``output_schema``, ``max_steps``...) or that litellm cannot
            send raises :class:`~helix_stream.errors.InvalidRequestError` here.
    """

    name: str
    system: str | None = None
    model: str | WrappedModel = "helix/demo"
    tools: Sequence[Tool] | Mapping[str, Tool] = ()
    max_steps: int = 50
    step_context: Callable[..., Any] | None = None
    step_context_limits: StepContextLimits = field(default_factory=StepContextLimits)
    hooks: Sequence[Any] = ()
    memory: Callable[..., Any] | None = None
    output_schema: type[BaseModel] | None = None
    client_tool_timeout: float | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("an Agent needs a name")
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        tools_by_name(self.tools)  # fail now on duplicate or non-Tool entries
        RetryPolicy(max_retries=self.max_retries)  # InvalidRequestError for a wrong count
        if self.output_schema is not None:
            check_output_schema(self.output_schema, argument="output_schema")
        check_params(self.settings, where="Agent(settings=...)")
        check_prompt_cache(self.prompt_cache)

    def as_tool(self, name: str | None = None, description: str | None = None) -> Tool:
        """This agent as a tool: each call runs it in a child session of the caller's.

        The child session's id is ``"<parent session>/<tool call id>"``; its
        ``current_session().parent`` names the call, the parent session, the root session and
        the parent's turn. Its define_state values are its own, never the parent's.
        """
        from .state import ParentInfo, current_scope

        agent = self

        class SubAgentInput(BaseModel):
            prompt: str

        async def run(input: SubAgentInput, ctx: Any) -> Any:
            scope = current_scope(f"sub-agent {agent.name!r}")
            parent = scope.info
            root = parent.parent.root_session_id if parent.parent else parent.id
            result = scope.run_child(
                agent,
                f"{parent.id}/{ctx.tool_call_id}",
                input.prompt,
                auth=parent.auth.current,
                parent=ParentInfo(
                    call_id=ctx.tool_call_id,
                    session_id=parent.id,
                    root_session_id=root,
                    turn=parent.turn,
                ),
            )
            text = await result.text()
            output = result.output
            if isinstance(output, BaseModel):  # a tool's output is JSON in the log
                return output.model_dump(mode="json")
            return output if output is not None else text

        return Tool(
            name=name or self.name,
            description=description or f"Ask the {self.name} agent; give it a prompt.",
            input_schema=SubAgentInput,
            execute=run,
        )

    @property
    def tool_map(self) -> dict[str, Tool]:
        """The agent's tools by name, with ``__finish__`` when it has an output schema."""
        tools = tools_by_name(self.tools)
        if self.output_schema is not None:
            tools[FINISH_TOOL_NAME] = finish_tool(self.output_schema)
        return tools
