"""``hs.MCPServer``: a Model Context Protocol server whose tools a run can use.

Connecting is lazy (the first ``offer()``, ``tools()`` or call), one connection is shared by
every call without per-request credentials (and one kept per distinct credential set, see
``_pool``), a dropped connection is replaced at the next use, and ``aclose()`` (or leaving
``async with``) lets every server go. The protocol itself is the ``mcp`` package's.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from .._tool_source import SourcedTools, ToolRequest
from ..errors import (
    FrameworkNotSupportedError,
)
from ..tools import Tool
from ._auth import split_auth, with_listing_token, with_token
from ._client import ServerClient
from ._credentials import checked_credentials, request_schema
from ._names import check_server_name
from ._offer import MCPOffer, make_offer, offer_and_gone
from ._tool import ApprovalRule, ToolBuilder, check_approval_rule
from ._transport import Transport, http_transport, stdio_transport

if TYPE_CHECKING:
    import httpx2

    from ..auth import AuthStrategy, Token

__all__ = ["MCPServer"]


Protocol = Literal["auto", "legacy"]


def _require_sdk() -> None:
    if importlib.util.find_spec("mcp") is None:
        raise FrameworkNotSupportedError(
            "MCP servers need the mcp package: pip install 'helix-stream[mcp]'"
        )
    found = importlib.metadata.version("mcp")
    if int(found.split(".")[0]) < 2:
        raise FrameworkNotSupportedError(
            f"MCP servers need mcp 2.3 or later, and mcp {found} is installed: "
            "pip install 'helix-stream[mcp]'"
        )


class MCPServer:
    """A Model Context Protocol server whose tools a run can use.

    Make one with :meth:`stdio` (a local subprocess) or :meth:`http` (a URL)::

        server = hs.MCPServer.stdio("python", ["weather_server.py"], name="weather")
        async with server:
            tools = await server.tools()          # weather__forecast, ...
            result = hs.stream_text(model="helix/demo", prompt="Forecast?", tools=tools)

    Attributes:
        name: Keys the server's ``tools_context`` entry and its stored offer, and is the
            default prefix of its tools' names.
        prefix: The offered names are ``{prefix}__{tool}`` (``""``: the tools' own names).
        context_schema: What a run's ``tools_context[name]`` must hold (``None``: nothing).
        auth: The auth strategy each of its tools has (``MCPServer.http(url, auth=...)``).
    """

    def __init__(
        self,
        *,
        name: str,
        transport: Transport,
        prefix: str | None = None,
        needs_approval: ApprovalRule = False,
        context_schema: type[BaseModel] | None = None,
        protocol: Protocol = "auto",
        connect_timeout: float = 30.0,
        max_connections: int = 8,
        auth: AuthStrategy | None = None,
    ) -> None:
        """Prefer :meth:`stdio` and :meth:`http`, which describe the transport for you."""
        _require_sdk()
        self.name = check_server_name(name)
        self.prefix = self.name if prefix is None else prefix
        if self.prefix:
            check_server_name(self.prefix, what="prefix")
        self.context_schema = context_schema
        self.auth = auth
        self._client = ServerClient.make(
            server=self.name,
            transport=transport,
            protocol=protocol,
            connect_timeout=connect_timeout,
            max_connections=max_connections,
        )
        self._tools = ToolBuilder(
            server=self.name,
            call=self._client.call,
            context_schema=context_schema,
            approval=check_approval_rule(needs_approval),
            auth=auth,
        )

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        name: str,
        prefix: str | None = None,
        needs_approval: ApprovalRule = False,
        request_env: Collection[str] = (),
        protocol: Protocol = "auto",
        connect_timeout: float = 30.0,
        max_connections: int = 8,
    ) -> MCPServer:
        """A server the app starts as a subprocess, speaking MCP on its stdin and stdout.

        Args:
            command: The executable (``"python"``, ``"npx"``, ``"uvx"``...).
            args: Its arguments.
            env: Environment variables for it, over a few safe ones inherited from the app
                (``PATH``, ``HOME``...; never the app's whole environment).
            cwd: Its working directory.
            name: The server's name (a letter first; letters, digits, ``-``, single ``_``).
            prefix: The offered names' prefix; defaults to ``name``, ``""`` for none.
            needs_approval: ``True``/``False`` for every tool, a set of tool names, or a
                function of an :class:`MCPToolSpec` returning a bool.
            request_env: Environment variables a run may set per request in
                ``tools_context[name] = {"env": {...}}``; each distinct set starts a server
                process of its own.
            protocol: ``"auto"`` negotiates the newest protocol both sides speak; ``"legacy"``
                uses the ``initialize`` handshake of the 2025 revisions.
            connect_timeout: Seconds to start and answer, before a ``ToolProviderError``.
            max_connections: Processes (credential sets) kept at once; the least recently
                used is closed past it.
        """
        transport = stdio_transport(command, args, env, cwd)
        return cls(
            name=name,
            transport=transport,
            prefix=prefix,
            needs_approval=needs_approval,
            context_schema=request_schema("env", request_env),
            protocol=protocol,
            connect_timeout=connect_timeout,
            max_connections=max_connections,
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: AuthStrategy | httpx2.Auth | None = None,
        *,
        name: str,
        prefix: str | None = None,
        needs_approval: ApprovalRule = False,
        request_headers: Collection[str] = (),
        transport: Literal["streamable-http", "sse"] = "streamable-http",
        protocol: Protocol = "auto",
        connect_timeout: float = 30.0,
        max_connections: int = 8,
    ) -> MCPServer:
        """A server at a URL, over streamable HTTP (or the older HTTP+SSE transport).

        Args:
            url: The MCP endpoint (``https://host/mcp``; for SSE, the ``/sse`` URL).
            headers: Headers for every request (an API key of the app's own).
            auth: An auth strategy (``hs.token_auth(...)``, ``hs.oauth_auth(...)``): each
                tool gets it as its ``auth=``, and sends its token as the ``Authorization``
                header (README, "Tools that act for the user: authorization"). Or an
                ``httpx2.Auth``, e.g. the ``mcp`` package's ``OAuthClientProvider``, for the
                transport.
            name, prefix, needs_approval, protocol, connect_timeout: As for :meth:`stdio`.
            request_headers: Header names a run may set per request in
                ``tools_context[name] = {"headers": {...}}`` (a user's ``Authorization``);
                each distinct set gets a connection (an MCP session) of its own.
            transport: ``"streamable-http"`` (current servers) or ``"sse"`` (older ones).
            max_connections: Connections (credential sets) kept at once.
        """
        strategy, http_auth = split_auth(auth, request_headers)
        spec = http_transport(url, headers, http_auth, transport)
        return cls(
            name=name,
            transport=spec,
            prefix=prefix,
            needs_approval=needs_approval,
            context_schema=request_schema("headers", request_headers),
            protocol=protocol,
            connect_timeout=connect_timeout,
            max_connections=max_connections,
            auth=strategy,
        )

    def __repr__(self) -> str:
        return f"MCPServer(name={self.name!r}, {self._client.transport.describe()})"

    async def __aenter__(self) -> MCPServer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection (a stdio server's process exits). A later use connects
        again."""
        await self._client.pool.aclose()

    async def offer(
        self, *, context: Mapping[str, Any] | None = None, token: Token | None = None
    ) -> MCPOffer:
        """What the server offers now, as a snapshot to store (see :class:`MCPOffer`).

        Args:
            context: Per-request credentials to list with (what ``tools_context[name]``
                holds), for a server that lists only to an authenticated caller.
            token: For a server with an auth strategy, the token to list with; by default
                the app's own, from the strategy (a session lists with its caller's).

        Raises:
            ToolProviderError: the server cannot be used (naming it and what to check).
            AuthorizationRequiredError: the server's strategy needs a sign-in first.
        """
        credentials = checked_credentials(self.name, self.context_schema, context)
        if self.auth is not None and token is None:
            return await with_listing_token(
                self.auth, lambda t: self.offer(context=context, token=t), server=self.name
            )
        listed = await self._client.list(with_token(credentials, token))
        return make_offer(self.name, self.prefix, listed)

    async def tools(
        self,
        offer: MCPOffer | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        token: Token | None = None,
    ) -> list[Tool]:
        """The server's tools, for ``tools=``.

        Args:
            offer: The stored offer of a session: exactly its tools are offered, in its
                order, and those the server no longer lists answer ``tool_unavailable``
                without a call. ``None``: what the server lists now.
            context, token: As for :meth:`offer`.

        With an ``offer``, a server that cannot be listed now (it is down) does not fail the
        turn: its offered tools are built all the same, each call becomes an error result the
        model reads, and a later use connects again (logged at WARNING on
        ``helix_stream.mcp``). Refused credentials still raise: the caller must sign in.

        Raises:
            ToolProviderError: without an ``offer``, the server cannot be used; or it lists an
                invalid schema.
            ToolProviderAuthError: the server refused the credentials.
            InvalidRequestError: ``offer`` is another server's.
        """
        offer, gone = await offer_and_gone(
            self.name, offer, lambda: self.offer(context=context, token=token)
        )
        return self._tools.build(offer, gone)

    async def get_tools(self, request: ToolRequest) -> SourcedTools:
        """The server as a tool source (``helix_stream/_tool_source.py``), once per turn.

        With the session's stored offer, its tools are built from the offer without listing
        the server: a tool the server has since removed is answered ``tool_unavailable`` when
        it is called (the call lists the server first, and sends nothing when the tool is
        gone). Without one, the server is listed — with the caller's token, for a server with
        an auth strategy — and the new offer is returned for the session to store.

        Raises:
            ToolProviderError: without an offer, the server cannot be used.
            ToolProviderAuthError: the server refused the credentials.
        """
        if request.offer is not None:
            offer = MCPOffer.decode(request.offer)
            tools = self._tools.build(offer, check=self._client.still_lists)
            return SourcedTools(tools=tuple(tools))
        if self.auth is None:
            offer = await self.offer(context=request.context)
        else:
            offer = await with_listing_token(
                self.auth,
                lambda token: self.offer(context=request.context, token=token),
                server=self.name,
                session=request.session,
                settings=request.auth,
            )
        return SourcedTools(tools=tuple(self._tools.build(offer)), offer=offer.encode())
