"""An agent's sandbox and skills in a session: what ``ctx.get_sandbox()`` and
``ctx.get_skill()`` reach, in tools, hooks and ``sandbox_on_session``.

Each agent has one sandbox per session (a sub-agent runs in a session of its own, so it gets
its own). It is made lazily, at the first ``get_sandbox()`` of the session, and its id is
recorded on the session (``helix.sandbox.<agent>`` in its meta, one small write), so that a
later turn — in this process or after a restart — attaches the same sandbox instead of making
a new one. :class:`TurnSandbox` is that for one turn: the sandbox is found once per turn,
under a lock, so that parallel tool calls share it:

1. the session records a sandbox → ``provider.attach(session, id)``; one that is gone
   (:class:`~helix_stream.errors.SandboxNotFoundError`: closed, removed) is replaced by a new
   one, logged as ``core.sandbox.replaced`` (a session never needs an operator);
2. otherwise ``provider.create(session, agent)``, its id recorded at once;
3. a new sandbox is *prepared*: the agent's skills laid out under ``/workspace/skills/<name>/``,
   then ``sandbox_on_session(ctx)`` run inside the session scope (``define_state`` and
   ``current_session()`` work there); only then is it recorded as ready. One whose preparation
   failed (or whose process died) is prepared again at the next ``get_sandbox()``.

:func:`close_sandboxes` is ``Executor.close_sandbox``: attach, close, forget the id.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import (
    FrameworkNotSupportedError,
    InvalidRequestError,
    SandboxNotFoundError,
    SessionBusyError,
    SessionNotFoundError,
)
from ..hooks import AgentInfo, ChannelInfo, HookContext
from ..sandbox import Sandbox, SandboxProvider, SkillHandle, SkillSet
from ..state import SessionInfo, SessionScope, bind_scope, current_scope
from ..store import Store, TurnWrite
from ._lease import TurnWriter
from ._meta import StoredSandbox, TurnMeta, sandbox_patch, stored_sandboxes

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["TurnSandbox", "close_sandboxes"]

logger = logging.getLogger("helix_stream.sandbox")


class TurnSandbox:
    """The agent's sandbox and skills as one turn reaches them (see the module docstring).

    Args:
        writer: How the turn writes its session (the sandbox id is recorded in its meta).
        scope: The turn's session scope.
        agent: The agent.
        channel: Where the turn came in (for ``sandbox_on_session``'s context).
        stored: The sandbox the session records for this agent, if any.
    """

    def __init__(
        self,
        *,
        writer: TurnWriter,
        scope: SessionScope,
        agent: Agent,
        channel: ChannelInfo,
        stored: StoredSandbox | None,
    ) -> None:
        self._writer = writer
        self._scope = scope
        self._agent = AgentInfo(name=agent.name)
        self._channel = channel
        self._provider: SandboxProvider | None = agent.sandbox
        self._on_session: Callable[[HookContext], Any] | None = agent.sandbox_on_session
        self._skills: SkillSet = agent.skill_set
        self._stored = stored
        self._lock = asyncio.Lock()
        self._sandbox: Sandbox | None = None

    async def get(self) -> Sandbox:
        """The agent's sandbox in this session (made, or attached, at the first call).

        Raises:
            NoActiveContextError: called outside the code the executor runs for the session.
            FrameworkNotSupportedError: the agent has no sandbox.
        """
        current_scope("ctx.get_sandbox()")
        if self._provider is None:
            raise FrameworkNotSupportedError(
                f"agent {self._agent.name!r} has no sandbox: give it one with "
                "Agent(sandbox=hs.LocalSandbox(root_dir)) (or another SandboxProvider) to use "
                "ctx.get_sandbox()."
            )
        async with self._lock:
            if self._sandbox is None:
                self._sandbox = await self._open(self._provider)
            return self._sandbox

    def skill(self, name: str) -> SkillHandle:
        """``ctx.get_skill(name)``: read from the sandbox when the agent has one, else from
        the skill's own files; an unknown skill shows up at the first read."""
        return self._skills.handle(name, sandbox=self.get if self._provider is not None else None)

    async def _open(self, provider: SandboxProvider) -> Sandbox:
        info, stored = self._scope.info, self._stored
        if stored is not None:
            try:
                sandbox = await provider.attach(info, stored.id)
            except SandboxNotFoundError:
                logger.warning(
                    "core.sandbox.replaced: the sandbox %r of agent %r in session %r is gone; "
                    "making a new one",
                    stored.id,
                    self._agent.name,
                    info.id,
                    extra={"event": "core.sandbox.replaced", "session_id": info.id},
                )
            else:
                return sandbox if stored.ready else await self._prepare(sandbox)
        sandbox = await provider.create(info, self._agent.name)
        if self._skills.skills or self._on_session is not None:
            # Recorded before preparing: a crash meanwhile leaves a sandbox that is found
            # (and prepared) again, never one that is lost.
            await self._record(StoredSandbox(id=sandbox.id, ready=False))
        return await self._prepare(sandbox)

    async def _prepare(self, sandbox: Sandbox) -> Sandbox:
        await self._skills.install(sandbox)
        if self._on_session is not None:

            async def this_sandbox() -> Sandbox:
                return sandbox  # not through get(): its lock is held while this runs

            ctx = HookContext(
                session=self._scope.info,
                agent=self._agent,
                channel=self._channel,
                _sandbox=this_sandbox,
                _skill=lambda name: self._skills.handle(name, sandbox=sandbox),
            )
            with bind_scope(self._scope):
                out = self._on_session(ctx)
                if inspect.isawaitable(out):
                    await out
        await self._record(StoredSandbox(id=sandbox.id, ready=True))
        return sandbox

    async def _record(self, stored: StoredSandbox) -> None:
        if stored == self._stored:
            return
        patch = sandbox_patch(self._agent.name, stored)
        await self._writer.write_turn(self._scope.info.id, TurnWrite(meta=patch))
        self._stored = stored


async def close_sandboxes(
    store: Store,
    session_id: str,
    providers: Mapping[str, SandboxProvider],
    *,
    agent: str | None = None,
) -> None:
    """End the sandboxes the session records — of ``agent`` only, when given — with the
    providers of ``providers`` (by agent name), and forget their ids.

    Raises:
        SessionNotFoundError: no such session.
        SessionBusyError: a turn of the session is running.
        InvalidRequestError: a recorded sandbox's provider is unknown (nothing was closed).
    """
    session = await store.get_session(session_id)
    if session is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    if session.status == "running" and not session.lease_expired():
        raise SessionBusyError(
            f"session {session_id!r} is running: close its sandbox once its turn has ended"
        )
    stored = stored_sandboxes(session.meta)
    if agent is not None:
        stored = {name: value for name, value in stored.items() if name == agent}
    unknown = sorted(set(stored) - set(providers))
    if unknown:
        raise InvalidRequestError(
            f"session {session_id!r} has sandboxes of agents {unknown} that this executor has "
            "not run: pass close_sandbox(session_id, agent=...) with the agent"
        )
    info = SessionInfo(id=session_id, turn=TurnMeta.read(session.meta).turn_info())
    for name, sandbox in stored.items():
        try:
            attached = await providers[name].attach(info, sandbox.id)
            await attached.close()
        except SandboxNotFoundError:
            pass  # gone already: forgetting its id is all that is left to do
        await store.update_session_meta(session_id, sandbox_patch(name, None))
