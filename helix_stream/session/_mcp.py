"""An agent's MCP servers in its sessions (``Agent(tools=[..., server])``).

The agent owns its servers: each connects at the first turn that needs it, serves every
session of every agent holding it (one connection per credential set: the server's pool),
connects again after a drop, and is let go by :meth:`SessionServers.close`.

**A stable offer.** What a server offers a session is fixed at the session's first turn:
:func:`server_tools` takes the server's offer then and returns it as a meta patch that the
turn's claim writes, in the same transaction as the turn's first write. Every later turn builds
the tools from the stored offer: the same bytes in every request, whatever the server lists by
then, so the provider's prompt cache keeps hitting. A tool the server has since removed stays
offered and gets ``tool_unavailable`` without a call; one it added is not offered to the
session until :meth:`SessionServers.refresh_tools`. A server that cannot be used at a
session's first turn refuses the turn before anything is written; later, a server that is
down fails only its calls, as error results the model reads.

Per-request credentials come from ``tools_context[server.name]``; a server with an auth
strategy lists with its caller's token (``helix_stream/mcp/_auth.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._tool_source import ToolRequest, resolve_sources
from ..auth._cache import DEFAULT_AUTH, AuthSettings
from ..errors import InvalidRequestError, SessionNotFoundError, ToolContextError
from ..loop._setup import RunSetup, finish_setup
from ..state import AuthInfo, ParentInfo, SessionInfo, TurnInfo
from ..store import Snapshot, Store
from ._commits import RUNNABLE
from ._meta import offers_patch, stored_offers

if TYPE_CHECKING:
    from ..agent import Agent
    from ..auth import TokenStore
    from ..mcp import MCPServer
    from ._request import TurnRequest

__all__ = ["SessionServers", "server_tools"]


async def server_tools(
    request: TurnRequest, snapshot: Snapshot
) -> tuple[TurnRequest, dict[str, Any]]:
    """The turn's request set up with its agent's tools, asked of each tool source once
    (``helix_stream/_tool_source.py``: an MCP server with a stored offer builds its tools from
    it without listing), and the meta patch of the offers this turn takes (a server the
    session has no offer of yet). Writes nothing. An agent without MCP servers was set up
    when its run was checked (``Executor.run``).

    Raises:
        ToolProviderError: a server the session has no offer of cannot be used.
        ToolProviderAuthError: a server refused the credentials.
        ToolContextError: a server's ``tools_context`` entry is missing or invalid.
    """
    agent, check, session = request.agent, request.setup, snapshot.session
    if isinstance(check, RunSetup):
        return request, {}
    if (session is None and request.message is None) or (
        session is not None and session.status not in RUNNABLE and not session.lease_expired()
    ):
        return request, {}  # refused anyway (no session, or a busy one): no listing for it
    for server in agent.servers:
        if server.name not in check.tools_context and server.context_schema is not None:
            raise ToolContextError(  # before anything is sent, as for any tool's context
                f"MCP server {server.name!r} takes per-request credentials, and tools_context "
                f"has no {server.name!r} entry. Pass tools_context={{{server.name!r}: {{...}}}}."
            )
    tools, taken = await resolve_sources(
        agent.tool_sources,
        check.tools_context,
        stored_offers(session.meta) if session is not None else {},
        session=_caller(request.session_id, request.auth, request.parent),
        auth=_listing_auth(request),
    )
    try:
        resolved = agent.tools_of(tools)
    except ValueError as exc:  # an MCP tool named like another tool of the agent
        raise InvalidRequestError(
            f"agent {agent.name!r}: {exc}; give the MCP server a prefix= of its own"
        ) from None
    # The run's one setup: the servers' contexts, and a telemetry filter naming their tools.
    return replace(request, setup=finish_setup(check, resolved)), offers_patch(taken)


def _names(offer: str | None) -> tuple[str, ...]:
    from ..mcp import MCPOffer

    return MCPOffer.decode(offer).names() if offer is not None else ()


def _listing_auth(request: TurnRequest) -> AuthSettings:
    """How a turn's listing resolves tokens: as its tools do (the executor's token store and
    principal), except that a listing cannot park for a sign-in."""
    if request.authorization is not None:
        return replace(request.authorization.settings, parks=False)
    return _auth_settings(request.setup.options.token_store)


def _auth_settings(token_store: TokenStore | None) -> AuthSettings:
    """How the turn's tools resolve tokens (as the loop does): the listing shares them."""
    return DEFAULT_AUTH if token_store is None else AuthSettings(token_store=token_store)


def _caller(session_id: str, auth: Any, parent: ParentInfo | None) -> SessionInfo:
    """The session as a listing's token request sees it (the turn is not counted yet)."""
    return SessionInfo(
        id=session_id, turn=TurnInfo(id="", sequence=0), auth=AuthInfo(current=auth), parent=parent
    )


class SessionServers:
    """The MCP servers of the agents an executor ran (the base of ``Executor``)."""

    store: Store
    identify: Callable[[Any], Any]
    token_store: TokenStore  # the executor's: a session's tools resolve tokens with it
    _servers: dict[int, MCPServer]

    def _own_servers(self, agent: Agent) -> None:
        """Keep ``agent``'s servers, to close them with the executor."""
        for server in agent.servers:
            self._servers.setdefault(id(server), server)

    async def refresh_tools(
        self,
        session_id: str,
        agent: Agent | None = None,
        *,
        tools_context: Mapping[str, Any] | None = None,
        auth: Any = None,
    ) -> dict[str, tuple[str, ...]]:
        """Take a new offer of the session's MCP servers: the tools each lists now.

        A session's offer is fixed at its first turn, so that every request carries the same
        bytes and the provider's prompt cache keeps hitting. This re-reads the list: the
        session's next turn offers the new tools, **which breaks the prompt cache once** (the
        request changes from the tool list on); later turns hit it again. Nothing of a
        running turn changes.

        Args:
            session_id: The session.
            agent: Whose servers; by default those this executor ran that the session has an
                offer of.
            tools_context: Per-request credentials to list with, by server name.
            auth: The caller, for a server with an auth strategy (its token is the caller's).

        Returns:
            The names each server now offers the session, by server name.

        Raises:
            SessionNotFoundError: no such session.
            InvalidRequestError: the session has an offer of a server this executor does not
                know (pass ``agent=``).
            ToolProviderError: a server cannot be used (nothing was written).
        """
        session = await self.store.get_session(session_id)
        if session is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        servers = agent.servers if agent is not None else self._known(stored_offers(session.meta))
        contexts = dict(tools_context or {})
        settings = AuthSettings(token_store=self.token_store, identify=self.identify)
        caller = _caller(session_id, auth, None)
        offers: dict[str, str | None] = {}
        for server in servers:  # every list read before anything is written
            request = ToolRequest(context=contexts.get(server.name), session=caller, auth=settings)
            offers[server.name] = (await server.get_tools(request)).offer
        if offers:
            await self.store.update_session_meta(session_id, offers_patch(offers))
        return {name: _names(offer) for name, offer in offers.items()}

    def _known(self, stored: Mapping[str, str]) -> list[MCPServer]:
        by_name = {server.name: server for server in self._servers.values()}
        unknown = sorted(name for name in stored if name not in by_name)
        if unknown:
            raise InvalidRequestError(
                f"the session has offers of MCP servers {unknown} this executor has not run: "
                "pass the agent (refresh_tools(session_id, agent))"
            )
        return [by_name[name] for name in stored]

    async def close(self) -> None:
        """Let go of what the executor holds open: every MCP server of the agents it ran
        closes its connections (a stdio server's process exits). A later turn connects again,
        so closing is safe at any time; the chat server's app calls it at shutdown."""
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            await server.aclose()
