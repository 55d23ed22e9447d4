"""``Executor.request_stop`` and ``Executor.close_sandbox``: a session's running turn and its
sandboxes, ended from outside the turn.

A stop is written to the session and read back by the running turn's lease heartbeat
(:mod:`._lease`), in whichever process runs it; a sandbox is ended through its agent's provider
(:mod:`._sandbox`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..errors import InvalidRequestError
from ._lease import STOP_KEY
from ._sandbox import close_sandboxes

if TYPE_CHECKING:
    from ..agent import Agent
    from ..sandbox import SandboxProvider
    from ..store import SessionRecord, Store

__all__ = ["SessionControl"]


class SessionControl:
    """The executor's ``request_stop`` and ``close_sandbox``."""

    store: Store
    # The sandbox providers of the agents run here, by agent name (close_sandbox).
    _sandboxes: dict[str, SandboxProvider]

    if TYPE_CHECKING:

        async def session(self, session_id: str) -> SessionRecord: ...

    async def request_stop(self, session_id: str, *, timeout: float = 30.0) -> bool:
        """Stop the session's running turn, wherever it runs: in this process or another one
        sharing the store (a replica). Returns once the turn has ended.

        The request is written to the session; the running turn's lease heartbeat reads it
        back within ``lease_renew_seconds`` and calls the turn's ``on_stop_requested`` (see
        :meth:`run`), which the chat server gives every turn: it ends as its stop route ends
        one (what was streamed stored as interrupted, the session idle).

        Returns:
            ``True`` once the turn has ended, ``False`` if no turn was running (or its
            process is gone: its lease expired) or it had not ended after ``timeout``.

        Raises:
            SessionNotFoundError: no such session.
        """
        loop = asyncio.get_running_loop()
        session = await self.session(session_id)
        token = session.lease_token
        if session.status != "running" or token is None or session.lease_expired():
            return False
        await self.store.update_session_meta(session_id, {STOP_KEY: token})
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            await asyncio.sleep(0.1)  # a stop is rare: polling its end costs nothing that counts
            now = await self.store.get_session(session_id)
            if now is None or now.lease_token != token or now.status != "running":
                return True
            if now.lease_expired():
                return False  # its process is gone: the next turn takes the session over
        return False

    async def close_sandbox(self, session_id: str, agent: Agent | None = None) -> None:
        """End the session's sandbox: its commands are stopped, its files gone, and the
        session forgets it (the next ``get_sandbox()`` makes a new one).

        Args:
            session_id: The session.
            agent: Whose sandbox to end; by default every sandbox the session has, of the
                agents this executor ran (after a restart, pass the agent).

        Raises:
            SessionNotFoundError: no such session.
            SessionBusyError: a turn of the session is running.
            InvalidRequestError: the session has a sandbox of an agent this executor does
                not know (pass ``agent=``), or ``agent`` has no sandbox (nothing was closed).
        """
        if agent is None:
            await close_sandboxes(self.store, session_id, self._sandboxes)
            return
        if agent.sandbox is None:
            raise InvalidRequestError(f"agent {agent.name!r} has no sandbox (Agent(sandbox=...))")
        providers = {agent.name: agent.sandbox}
        await close_sandboxes(self.store, session_id, providers, agent=agent.name)
