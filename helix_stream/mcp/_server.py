"""``hs.MCPServer``: a Model Context Protocol server whose tools a run can use.

Connecting is lazy (the first ``offer()``, ``tools()`` or call), one connection is shared by
every call without per-request credentials (and one kept per distinct credential set, see
``_pool``), a dropped connection is replaced at the next use, and ``aclose()`` (or leaving
``async with``) lets every server go. The protocol itself is the ``mcp`` package's.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ValidationError

from .._tool_source import SourcedTools, ToolRequest
from ..errors import (
    FrameworkNotSupportedError,
    InvalidRequestError,
    ToolContextError,
    ToolFailedError,
    ToolProviderAuthError,
    ToolProviderError,
    describe_validation,
)
from ..telemetry import annotate_tool_call, mcp_attributes
from ..tools import Tool
from ._auth import split_auth, with_listing_token, with_token
from ._connection import Connection
from ._credentials import NO_CREDENTIALS, Credentials, credentials_of, request_schema
from ._names import check_server_name
from ._offer import MCPOffer, make_offer
from ._pool import Pool
from ._tool import ApprovalRule, CheckFn, build_tool, check_approval_rule, needs_approval
from ._transport import HttpTransport, StdioTransport, Transport

if TYPE_CHECKING:
    import httpx2

    from ..auth import AuthStrategy, Token

__all__ = ["MCPServer"]

_log = logging.getLogger("helix_stream.mcp")

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


def _strings(value: Mapping[str, str] | None, what: str) -> tuple[tuple[str, str], ...]:
    items = dict(value or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
        raise InvalidRequestError(f"{what}= takes a mapping of strings to strings")
    return tuple(items.items())


class MCPServer:
    """A Model Context Protocol server whose tools a run can use.

    Make one with :meth:`stdio` (a local subprocess) or :meth:`http` (a URL)::

        server = hs.MCPServer.stdio("python", ["weather_server.py"], name="weather")
        async with server:
            tools = await server.tools()          # weather__forecast, ...
            result = hs.stream_text(model=..., prompt="...", tools=tools)

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
        if protocol not in ("auto", "legacy"):
            raise InvalidRequestError(f"protocol= is 'auto' or 'legacy', not {protocol!r}")
        if not connect_timeout > 0 or not (isinstance(max_connections, int) and max_connections):
            raise InvalidRequestError("connect_timeout= and max_connections= must be positive")
        self.context_schema = context_schema
        self.auth = auth
        self._transport = transport
        self._approval = check_approval_rule(needs_approval)
        secrets = {value for _, value in getattr(transport, "headers", ())}
        secrets |= {value for _, value in getattr(transport, "env", ())}

        def connect(credentials: Credentials) -> Connection:
            return Connection(
                server=self.name,
                transport=transport,
                credentials=credentials,
                protocol=protocol,
                secrets=frozenset(secrets),
            )

        self._pool = Pool(connect, limit=max_connections, timeout=connect_timeout)

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
        if not isinstance(command, str) or not command:
            raise InvalidRequestError("MCPServer.stdio() needs a command")
        if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
            raise InvalidRequestError("args= takes a list of strings")
        transport = StdioTransport(
            command=command,
            args=tuple(args),
            env=_strings(env, "env"),
            cwd=os.fspath(cwd) if cwd is not None else None,
        )
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
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            raise InvalidRequestError("MCPServer.http() needs an http:// or https:// URL")
        if transport not in ("streamable-http", "sse"):
            raise InvalidRequestError(
                f"transport= is 'streamable-http' or 'sse', not {transport!r}"
            )
        strategy, http_auth = split_auth(auth, request_headers)
        spec = HttpTransport(
            url=url,
            headers=_strings(headers, "headers"),
            auth=http_auth,
            kind="sse" if transport == "sse" else "http",
        )
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
        return f"MCPServer(name={self.name!r}, {self._transport.describe()})"

    async def __aenter__(self) -> MCPServer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection (a stdio server's process exits). A later use connects
        again."""
        await self._pool.aclose()

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
        credentials = self._credentials(context)
        if self.auth is not None and token is None:
            return await with_listing_token(
                self.auth, lambda t: self.offer(context=context, token=t), server=self.name
            )
        listed = await self._list(with_token(credentials, token))
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
        return (await self.offered(offer, context=context, token=token))[1]

    async def offered(
        self,
        offer: MCPOffer | None = None,
        *,
        context: Mapping[str, Any] | None = None,
        token: Token | None = None,
    ) -> tuple[MCPOffer, list[Tool]]:
        """:meth:`tools`, with the offer they were built from: ``offer`` itself, or (without
        one) the new offer the server's list made, to store. One listing either way."""
        if offer is not None and offer.server != self.name:
            raise InvalidRequestError(
                f"that offer is MCP server {offer.server!r}'s, not {self.name!r}'s"
            )
        try:
            current = await self.offer(context=context, token=token)
        except ToolProviderAuthError:
            raise
        except ToolProviderError as exc:
            if offer is None:
                raise
            _log.warning("%s; offering the stored tools, whose calls fail until it is back", exc)
            current = offer
        offer = offer or current
        gone = offer.unavailable(spec.remote_name for spec in current.tools)
        return offer, self._built(offer, gone)

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
            return SourcedTools(tools=tuple(self._built(offer, (), check=self._still_lists)))
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
        return SourcedTools(tools=tuple(self._built(offer, ())), offer=offer.encode())

    def _built(
        self, offer: MCPOffer, gone: Collection[str], check: CheckFn | None = None
    ) -> list[Tool]:
        """The tools of ``offer`` (those in ``gone``: offered, not available)."""
        return [
            build_tool(
                spec,
                server=self.name,
                call=self._call,
                context_schema=self.context_schema,
                approval=needs_approval(self._approval, spec),
                available=spec.name not in gone,
                auth=self.auth,
                check=check,
            )
            for spec in offer.tools
        ]

    async def _still_lists(self, remote: str, context: Any, token: Token | None) -> bool:
        """Whether the server still lists the tool ``remote`` (for a call of a tool built from
        a stored offer)."""
        listed = await self._list(with_token(credentials_of(context), token))
        return any(str(raw.get("name")) == remote for raw in listed)

    def _credentials(self, context: Mapping[str, Any] | None) -> Credentials:
        if context is None:
            return NO_CREDENTIALS
        if self.context_schema is None:
            raise InvalidRequestError(
                f"MCP server {self.name!r} takes no per-request credentials: declare them "
                "with request_headers= (HTTP) or request_env= (stdio)"
            )
        try:
            return credentials_of(self.context_schema.model_validate(context))
        except ValidationError as exc:
            raise ToolContextError(
                f"the context for MCP server {self.name!r} is invalid: {describe_validation(exc)}"
            ) from None

    async def _list(self, credentials: Credentials) -> list[dict[str, Any]]:
        for attempt in (1, 2):
            connection = await self._pool.acquire(credentials)
            try:
                return await connection.list_tools()
            except ToolProviderAuthError:
                raise
            except ToolProviderError:
                # The connection was already gone (a server that exited since its last use):
                # listing is safe to repeat, once, on a new one.
                if attempt == 2 or connection.alive:
                    raise
        raise AssertionError("unreachable")

    def _attributes(self, connection: Connection | None, tool: str) -> dict[str, Any]:
        return mcp_attributes(
            method="tools/call",
            transport=self._transport.kind,
            server=self.name,
            url=self._transport.url,
            protocol_version=connection.protocol_version if connection else None,
            session_id=connection.seen.session_id if connection else None,
            tool=tool,
        )

    async def _call(
        self, tool: str, arguments: dict[str, Any], context: Any, token: Token | None
    ) -> Any:
        """Send ``tools/call`` on the connection for the call's credentials."""
        try:
            connection = await self._pool.acquire(with_token(credentials_of(context), token))
        except ToolProviderError:
            annotate_tool_call(self._attributes(None, tool))
            raise
        annotate_tool_call(self._attributes(connection, tool))
        try:
            return await connection.request(lambda client: client.call_tool(tool, arguments))
        except ToolFailedError as exc:
            if exc.error_type and exc.error_type.lstrip("-").isdigit():
                annotate_tool_call({"rpc.response.status_code": exc.error_type})
            raise
