"""What one server's tools do over the wire: list, call, and check a stored tool is still listed.

:class:`ServerClient` owns a server's connection pool (one connection per credential set, see
``_pool``) and the two requests a run sends: ``tools/list`` (repeated once on a fresh connection
when the pooled one had already gone) and ``tools/call`` (annotated on the tool's span with the
MCP attributes). ``MCPServer`` is the public face that builds it; the tools it builds call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..errors import InvalidRequestError, ToolFailedError, ToolProviderAuthError, ToolProviderError
from ..telemetry import annotate_tool_call, mcp_attributes
from ._auth import with_token
from ._connection import Connection
from ._credentials import Credentials, credentials_of
from ._pool import Pool
from ._transport import Transport

if TYPE_CHECKING:
    from ..auth import Token

__all__ = ["ServerClient"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerClient:
    """One server's pool of connections and the requests a run sends on them."""

    server: str
    transport: Transport
    pool: Pool

    @classmethod
    def make(
        cls,
        *,
        server: str,
        transport: Transport,
        protocol: Literal["auto", "legacy"],
        connect_timeout: float,
        max_connections: int,
    ) -> ServerClient:
        """A client whose connections carry the transport's own headers and environment as
        secrets (never echoed in an error).

        Raises:
            InvalidRequestError: an unknown protocol, or a limit that is not positive.
        """
        if protocol not in ("auto", "legacy"):
            raise InvalidRequestError(f"protocol= is 'auto' or 'legacy', not {protocol!r}")
        if not connect_timeout > 0 or not (isinstance(max_connections, int) and max_connections):
            raise InvalidRequestError("connect_timeout= and max_connections= must be positive")
        secrets = {value for _, value in getattr(transport, "headers", ())}
        secrets |= {value for _, value in getattr(transport, "env", ())}

        def connect(credentials: Credentials) -> Connection:
            return Connection(
                server=server,
                transport=transport,
                credentials=credentials,
                protocol=protocol,
                secrets=frozenset(secrets),
            )

        pool = Pool(connect, limit=max_connections, timeout=connect_timeout)
        return cls(server=server, transport=transport, pool=pool)

    async def list(self, credentials: Credentials) -> list[dict[str, Any]]:
        """``tools/list`` with these credentials."""
        for attempt in (1, 2):
            connection = await self.pool.acquire(credentials)
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

    async def still_lists(self, remote: str, context: Any, token: Token | None) -> bool:
        """Whether the server still lists the tool ``remote`` (for a call of a tool built from
        a stored offer)."""
        listed = await self.list(with_token(credentials_of(context), token))
        return any(str(raw.get("name")) == remote for raw in listed)

    async def call(
        self, tool: str, arguments: dict[str, Any], context: Any, token: Token | None
    ) -> Any:
        """Send ``tools/call`` on the connection for the call's credentials."""
        try:
            connection = await self.pool.acquire(with_token(credentials_of(context), token))
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

    def _attributes(self, connection: Connection | None, tool: str) -> dict[str, Any]:
        return mcp_attributes(
            method="tools/call",
            transport=self.transport.kind,
            server=self.server,
            url=self.transport.url,
            protocol_version=connection.protocol_version if connection else None,
            session_id=connection.seen.session_id if connection else None,
            tool=tool,
        )
