"""``Agent``: the definition an :class:`~helix_stream.Executor` runs in a session."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Generic, Literal

from pydantic import BaseModel
from typing_extensions import TypeVar

from ._result_size import check_result_limit
from ._tool_source import FunctionTools, ToolSource
from ._usage_limits import UsageLimits, check_limits
from .context import StepContextLimits
from .context._compaction import Compaction
from .errors import InvalidRequestError
from .loop._options import LoopOptions, documents_options
from .loop._params import check_known, check_params, unknown_keyword
from .loop._sub_agent_tool import sub_agent_tool
from .middleware import WrappedModel
from .models._cache import check_prompt_cache
from .models._output import check_output_schema
from .models._retry import RetryPolicy
from .sandbox import LOAD_SKILL_TOOL, SandboxProvider, Skill, SkillSet
from .tools import FINISH_TOOL_NAME, Tool, finish_tool, tools_by_name

if TYPE_CHECKING:
    from .mcp import MCPServer

__all__ = ["TURN_POLICIES", "Agent", "OutputT", "StepContextLimits", "TurnPolicy"]

OutputT = TypeVar("OutputT", bound=BaseModel, default=Any)
"""An agent's structured answer: its ``output_schema`` (``Any`` without one)."""


TurnPolicy = Literal["steer", "queue", "reject"]
"""What a chat server does with a user message that arrives while a turn of its session runs."""

TURN_POLICIES: tuple[TurnPolicy, ...] = ("steer", "queue", "reject")


def _check_run_options(agent: Agent[Any]) -> None:
    """The run options an agent carries, checked as a run checks them.

    Raises:
        InvalidRequestError: a wrong retry count, ``prompt_cache``, ``max_tool_result_bytes``
            usage limits or ``compaction``.
        ValueError: an unknown ``turn_policy``.
    """
    RetryPolicy(max_retries=agent.max_retries)
    check_prompt_cache(agent.prompt_cache)
    check_result_limit(agent.max_tool_result_bytes, argument="Agent(max_tool_result_bytes=...)")
    check_limits(agent.usage_limits, where="Agent(usage_limits=...)")
    check_limits(agent.session_limits, where="Agent(session_limits=...)")
    if agent.turn_policy is not None and agent.turn_policy not in TURN_POLICIES:
        raise ValueError(
            f"turn_policy must be one of {list(TURN_POLICIES)}, not {agent.turn_policy!r}"
        )
    if agent.compaction is not None and not isinstance(agent.compaction, Compaction):
        raise InvalidRequestError("Agent(compaction=...) takes an hs.Compaction(...)")


@documents_options
@dataclass(slots=True, kw_only=True)
class Agent(LoopOptions, Generic[OutputT]):
    """An agent: a system prompt, a model, tools, and how its sessions run.

    Generic in its structured answer: ``hs.Agent(output_schema=City)`` is an
    ``Agent[City]``, and ``executor.run(agent, ...)`` a ``StreamTextResult[City]``.

    The system prompt is fixed for a session (changing it would throw away the provider's
    prompt cache); tell the model something new with context rows instead
    (``executor.add_context``).

    Besides its own fields, an agent takes every run option of
    :func:`~helix_stream.stream_text` as a field (listed under "Args" below), and
    ``settings``, its litellm params. For one turn, an option given to ``Executor.run`` wins
    over the agent's (litellm params merge, the run's over ``settings``). An unknown keyword is
    a ``TypeError`` naming the closest field.

    Example::

        agent = hs.Agent(name="assistant", model="helix/demo", tools=[weather], max_steps=10)

    Args:
        {run options}

    Attributes:
        name: Recorded on the session.
        system: The system prompt.
        model: A litellm model string or a :func:`~helix_stream.wrap_model` result.
        tools: A list of tools or a ``{name: Tool}`` dict. The list may hold
            :class:`~helix_stream.MCPServer` values too: the agent owns them, and each
            session offers the server's tools where the server stands in the list, as its
            first turn found them (README, "Tools from MCP servers").
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
        sandbox: A sandbox provider (``hs.LocalSandbox(root_dir)``, or your own
            ``hs.SandboxProvider``): each session of the agent gets one sandbox, made at its
            first ``ctx.get_sandbox()`` (README, "Sandboxes and skills").
        skills: Skills the model loads on demand (``hs.skills_from_dir(path)`` or
            ``hs.Skill`` values): their index goes into the system prompt, in name order,
            and the agent gets the built-in ``load_skill`` tool; with a sandbox they are also
            laid out in it under ``/workspace/skills/<name>/``.
        sandbox_on_session: ``fn(ctx)``, sync or async: called once when a session's sandbox
            is made, to prepare it (``await ctx.get_sandbox()``), inside the session scope.
        session_limits: Limits on what each session may use in all (``hs.UsageLimits``),
            counted from its stored totals (``executor.usage``): a turn whose next model call
            would cross one stops before it with ``UsageLimitExceededError``, and one that
            starts with a limit reached is refused before anything is written.
        turn_policy: What the chat server does with a user message that arrives while a turn
            runs: ``"steer"`` (the default) delivers it to that turn at its next step,
            ``"queue"`` runs it as the next turn, ``"reject"`` refuses it (409). ``None``:
            the server's ``turn_policy`` (docs/guides/serving.md, "Steering").
        settings: litellm params for every call (temperature, api_base, ...). A keyword that
            is the agent's own (``output_schema``, ``max_steps``...) or that litellm cannot
            send raises :class:`~helix_stream.errors.InvalidRequestError` here; one litellm
            does not know, a ``TypeError`` naming the closest known one.
    """

    name: str
    system: str | None = None
    model: str | WrappedModel = "helix/demo"
    tools: Sequence[Tool | MCPServer] | Mapping[str, Tool] = ()
    max_steps: int = 50
    step_context: Callable[..., Any] | None = None
    step_context_limits: StepContextLimits = field(default_factory=StepContextLimits)
    hooks: Sequence[Any] = ()
    memory: Callable[..., Any] | None = None
    output_schema: type[OutputT] | None = None
    client_tool_timeout: float | None = None
    sandbox: SandboxProvider | None = None
    skills: Sequence[Skill] = ()
    sandbox_on_session: Callable[..., Any] | None = None
    session_limits: UsageLimits | None = None
    turn_policy: TurnPolicy | None = None
    compaction: Compaction | None = None
    _skill_cache: tuple[tuple[Skill, ...], SkillSet] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("an Agent needs a name")
        if self.max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        _check_servers(self.servers)
        tools_by_name(self._own_tools)  # fail now on duplicate or non-Tool entries
        _check_run_options(self)
        if self.output_schema is not None:
            check_output_schema(self.output_schema, argument="output_schema")
        check_params(self.settings, where="Agent(settings=...)")
        check_known(self.settings, where="Agent(settings=...)", model=self.model)
        _check_sandbox_and_skills(self)

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        stream_progress: bool = False,
    ) -> Tool:
        """This agent as a tool: each call runs it in a child session of the caller's.

        The child session's id is ``"<parent session>/<tool call id>"``; its
        ``current_session().parent`` names the call, the parent session, the root session and
        the parent's turn. Its define_state values are its own, never the parent's.

        With ``stream_progress=True`` the child's text and tool calls reach the parent's
        stream while it runs, as preliminary output of the call (``{"text": ...,
        "toolCalls": [...]}``; a chat UI of ``ai@6`` or later shows it in the tool part). The
        parent model, the stored log and the call's result never see it: the result is the
        child's answer, the same as without it. The child's spans nest under the call's.

        Example::

            researcher = hs.Agent(name="researcher", model="helix/demo")
            lead = hs.Agent(
                name="lead", model="helix/demo", tools=[researcher.as_tool(stream_progress=True)]
            )
        """
        return sub_agent_tool(self, name, description, stream_progress=stream_progress)

    @property
    def skill_set(self) -> SkillSet:
        """The agent's skills, sorted by name (raises SkillFormatError for a bad list)."""
        skills = tuple(self.skills)
        if self._skill_cache is None or self._skill_cache[0] != skills:
            self._skill_cache = (skills, SkillSet(skills))
        return self._skill_cache[1]

    @property
    def system_prompt(self) -> str | None:
        """The system prompt the agent sends: ``system``, then the skill index.

        A pure function of the agent's definition (the skills sorted by name, whether it has
        a sandbox): every request of every session carries the same bytes, so the
        provider's prompt cache keeps hitting.
        """
        index = self.skill_set.index(sandbox=self.sandbox is not None)
        if not index:
            return self.system
        return f"{self.system}\n\n{index}" if self.system else index

    @property
    def servers(self) -> tuple[MCPServer, ...]:
        """The MCP servers in ``tools``, in order."""
        if isinstance(self.tools, Mapping):
            return ()
        return tuple(entry for entry in self.tools if not isinstance(entry, Tool))

    @property
    def _own_tools(self) -> Sequence[Tool] | Mapping[str, Tool]:
        if isinstance(self.tools, Mapping):
            return self.tools
        return [entry for entry in self.tools if isinstance(entry, Tool)]

    @property
    def tool_map(self) -> dict[str, Tool]:
        """The agent's tools by name, with ``load_skill`` when it has skills and
        ``__finish__`` when it has an output schema (an MCP server's tools come at its turns:
        see :attr:`tool_sources`)."""
        return self.tools_with({})

    def tools_with(self, served: Mapping[str, Sequence[Tool]]) -> dict[str, Tool]:
        """:attr:`tool_map` with ``served[server.name]`` where each MCP server stands in
        ``tools`` (a server missing from ``served`` brings none).

        Raises:
            ValueError: two tools have one name.
        """
        tools: list[Tool] = []
        for source in self.tool_sources:
            if isinstance(source, FunctionTools):
                tools.extend(source.tools)
            elif isinstance(source, SkillSet):
                tools.append(source.tool)
            else:
                tools.extend(served.get(source.name, ()))
        return self.tools_of(tools)

    @property
    def tool_sources(self) -> tuple[ToolSource, ...]:
        """Where the agent's tools come from, in the order they are offered: its function
        tools and each MCP server, where they stand in ``tools``, then its skills
        (``load_skill``). A turn asks each once (``helix_stream/_tool_source.py``)."""
        if isinstance(self.tools, Mapping):
            sources: list[ToolSource] = [FunctionTools(tuple(self._own_tools_in_order))]
        else:
            sources, group = [], []
            for entry in self.tools:
                if isinstance(entry, Tool):
                    group.append(entry)
                    continue
                if group:
                    sources.append(FunctionTools(tuple(group)))
                    group = []
                sources.append(entry)
            if group:
                sources.append(FunctionTools(tuple(group)))
        if self.skill_set.skills:
            sources.append(self.skill_set)
        return tuple(sources)

    def tools_of(self, tools: Sequence[Tool]) -> dict[str, Tool]:
        """The turn's tools by name: ``tools`` (what the sources gave, in order) with
        ``__finish__`` when the agent has an output schema.

        Raises:
            ValueError: two tools have one name.
        """
        by_name = tools_by_name(tools)
        if self.output_schema is not None:
            by_name[FINISH_TOOL_NAME] = finish_tool(self.output_schema)
        return by_name

    @property
    def _own_tools_in_order(self) -> list[Tool]:
        if isinstance(self.tools, Mapping):
            return list(tools_by_name(self.tools).values())
        return [entry for entry in self.tools if isinstance(entry, Tool)]


def _check_sandbox_and_skills(agent: Agent[Any]) -> None:
    """Refuse a sandbox, a sandbox_on_session or skills the agent cannot use."""
    if agent.sandbox is not None and not isinstance(agent.sandbox, SandboxProvider):
        raise InvalidRequestError(
            f"Agent(sandbox=...) needs a sandbox provider (async create(session, agent) "
            f"and attach(session, sandbox_id)), such as hs.LocalSandbox(root_dir), not a "
            f"{type(agent.sandbox).__name__}"
        )
    if agent.sandbox_on_session is not None:
        if not callable(agent.sandbox_on_session):
            raise InvalidRequestError("Agent(sandbox_on_session=...) must be a function")
        if agent.sandbox is None:
            raise InvalidRequestError(
                "Agent(sandbox_on_session=...) prepares the agent's sandbox: give it "
                "Agent(sandbox=...) too"
            )
    if agent.skill_set.skills and LOAD_SKILL_TOOL in tools_by_name(agent._own_tools):
        raise InvalidRequestError(
            f"a tool is named {LOAD_SKILL_TOOL!r}, the built-in tool of an agent with "
            "skills: rename it"
        )


def _check_servers(servers: Sequence[Any]) -> None:
    """Refuse a ``tools`` entry that is neither a Tool nor an MCP server, and two servers of
    one name (their stored offers and ``tools_context`` entries would be one)."""
    if not servers:
        return
    from .mcp import MCPServer

    names: set[str] = set()
    for server in servers:
        if not isinstance(server, MCPServer):
            raise TypeError(f"{server!r} is not a Tool; define it with hs.tool() (or hs.MCPServer)")
        if server.name in names:
            raise ValueError(f"two MCP servers are named {server.name!r}")
        names.add(server.name)


def _strict_keywords(cls: type[Agent[Any]]) -> None:
    """An unknown keyword to ``Agent(...)`` is a ``TypeError`` naming the closest field (the
    dataclass's own message names none): ``Agent(tool_context=...)`` says ``tools_context``."""
    init = cls.__init__
    names = [f.name for f in fields(cls) if f.init]

    @functools.wraps(init)
    def strict_init(self: Agent[Any], *args: Any, **kwargs: Any) -> None:
        for name in kwargs.keys() - names:
            raise TypeError(
                unknown_keyword(name, "Agent()", own=names)
                + " An Agent's litellm parameters go in settings={...}."
            )
        init(self, *args, **kwargs)

    setattr(cls, "__init__", strict_init)  # noqa: B010  # mypy keeps the dataclass's signature


_strict_keywords(Agent)
