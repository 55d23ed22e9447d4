"""What a hook handler receives besides the event: :class:`HookContext`, with the session, the
agent (:class:`AgentInfo`) and the channel the turn came in on (:class:`ChannelInfo`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import FrameworkNotSupportedError
from ..state import SessionInfo

if TYPE_CHECKING:
    from ..sandbox import Sandbox, SkillHandle


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentInfo:
    """The agent a hook runs for: ``name``; ``node_id`` names its node where the agent runs
    as one node of a graph of agents (``None`` here: an agent runs on its own).

    Example::

        from helix_stream.hooks import HookContext, LifecycleEvent

        def handler(event: LifecycleEvent, ctx: HookContext) -> None:
            print(ctx.agent.name)                      # the agent running the session

        hook = hs.define_hook(events={"*": handler})
    """

    name: str
    node_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelInfo:
    """Where the turn came in: ``kind`` is ``"http"`` (the chat server), ``"python"``
    (``Executor.run`` called by your code) or ``"subagent"`` (a sub-agent's turn, run by its
    parent's tool call). ``continuation_token`` resumes the turn's stream where the channel
    has one to give (``None`` where it does not apply).

    Example::

        from helix_stream.hooks import HookContext, LifecycleEvent

        def handler(event: LifecycleEvent, ctx: HookContext) -> None:
            print(ctx.channel.kind)                    # "http", "python" or "subagent"

        hook = hs.define_hook(events={"*": handler})
    """

    kind: str
    continuation_token: str | None = None


@dataclass(slots=True, kw_only=True)
class HookContext:
    """What a handler receives besides the event (and what ``Agent(sandbox_on_session=...)``
    receives).

    Attributes:
        session: The session the event belongs to.
        agent: The agent (``agent.name``).
        channel: Where the turn came in (``channel.kind``).

    Example::

        from helix_stream.hooks import HookContext, TurnStartedEvent

        async def remind(event: TurnStartedEvent, ctx: HookContext) -> None:
            if event.data["turn"] == 1:
                await ctx.add_context([hs.instruction("Greet the user by name.")])   # a row

        hook = hs.define_hook(events={"turn.started": remind})
    """

    session: SessionInfo
    agent: AgentInfo
    channel: ChannelInfo
    _add: Callable[[Sequence[Any], int], Awaitable[int]] | None = None
    _sandbox: Callable[[], Awaitable[Sandbox]] | None = None
    _skill: Callable[[str], SkillHandle] | None = None
    _position: int = 0

    async def add_context(self, items: Sequence[Any]) -> int:
        """Queue context items (source ``app`` unless they name another) for the next model
        call; re-running the same handler for the same event queues nothing twice.

        Raises:
            FrameworkNotSupportedError: here context cannot be queued (``sandbox_on_session``).
        """
        position = self._position
        self._position += 1
        if self._add is None:
            raise FrameworkNotSupportedError(
                "ctx.add_context is for lifecycle hooks and tools; sandbox_on_session only "
                "prepares the sandbox (queue context from a hook or a tool instead)."
            )
        return await self._add(items, position)

    async def get_sandbox(self) -> Sandbox:
        """The agent's sandbox in this session, made at the first call (see
        ``ToolContext.get_sandbox``).

        Raises:
            FrameworkNotSupportedError: the agent has no sandbox (``Agent(sandbox=...)``).
            NoActiveContextError: called after the handler's event was handled.
        """
        if self._sandbox is None:
            raise FrameworkNotSupportedError("ctx.get_sandbox needs a session run (Executor.run)")
        return await self._sandbox()

    def get_skill(self, name: str) -> SkillHandle:
        """A handle on the agent's skill ``name`` (see ``ToolContext.get_skill``)."""
        if self._skill is None:
            raise FrameworkNotSupportedError("ctx.get_skill needs a session run (Executor.run)")
        return self._skill(name)
