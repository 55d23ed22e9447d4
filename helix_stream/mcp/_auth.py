"""Sign-in for an HTTP MCP server: ``MCPServer.http(url, auth=hs.token_auth(...))``.

A server given an auth strategy (``hs.token_auth(...)``, ``hs.oauth_auth(...)``) makes each
of its tools an ``hs.Tool`` with that ``auth=``: a call asks ``await ctx.get_token()``, like
any tool with ``auth=``, and sends the token as the request's ``Authorization`` header. The
token is then one more per-request credential (a connection, an MCP session, of its own: see
``_pool``), and everything the tool-authorization flow does for a tool (one resolution per
step, the token store, a sign-in the turn waits for) applies with nothing MCP-specific. A
server that refuses the token (HTTP 401/403) makes the call ``ctx.reject_token()``: the token
leaves the token store, and the next call asks for a new one.

Listing the tools needs a token too (a server that checks it checks every request). A
session's turn resolves it for the session's caller (``session/_mcp.py``); outside a session,
``offer()`` and ``tools()`` ask the strategy for the app's own token (a ``token_auth``), as a
plain ``stream_text`` call does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any, TypeVar

from .._auth_strategy import AuthStrategy, InteractiveAuth, TokenAuth, is_interactive
from .._token import Token, TokenRequest
from ..auth._cache import DEFAULT_AUTH, AuthSettings, StepTokens
from ..auth._store import evict, token_owner
from ..errors import InvalidRequestError, ToolProviderAuthError
from ._credentials import Credentials

if TYPE_CHECKING:
    from ..state import SessionInfo

__all__ = ["split_auth", "with_listing_token", "with_token"]

T = TypeVar("T")

_AUTHORIZATION = "authorization"


def split_auth(auth: Any, request_headers: Collection[str]) -> tuple[AuthStrategy | None, Any]:
    """``auth=`` of ``MCPServer.http``: an auth strategy (for the tools), or an ``httpx2.Auth``
    (for the transport).

    Raises:
        InvalidRequestError: a strategy, and ``Authorization`` is also a per-request header
            (the two would fight over one header).
    """
    if not isinstance(auth, (TokenAuth, InteractiveAuth)):
        return None, auth
    if _AUTHORIZATION in {name.lower() for name in request_headers}:
        raise InvalidRequestError(
            "auth= with an auth strategy sets the Authorization header: it cannot also be in "
            "request_headers="
        )
    return auth, None


def with_token(credentials: Credentials, token: Token | None) -> Credentials:
    """``credentials`` with the token as the ``Authorization`` header."""
    if token is None:
        return credentials
    headers = {name: value for name, value in credentials.headers if name.lower() != _AUTHORIZATION}
    headers[_AUTHORIZATION] = f"Bearer {token.token}"
    return Credentials(headers=tuple(sorted(headers.items())), env=credentials.env)


async def with_listing_token(
    strategy: AuthStrategy,
    use: Callable[[Token], Awaitable[T]],
    *,
    server: str,
    session: SessionInfo | None = None,
    settings: AuthSettings = DEFAULT_AUTH,
) -> T:
    """``await use(token)`` with the token to list a server's tools with, for ``session``'s
    caller (``None``: the app's). A token the server refuses leaves the token store, so that
    the next listing asks for a new one.

    Raises:
        AuthorizationRequiredError: an interactive strategy, and no token is kept for the
            caller (a sign-in happens at a tool call, in a session that can wait for it).
        ToolProviderAuthError: the server refused the token.
    """
    owner = token_owner(session, settings.identify, interactive=is_interactive(strategy))
    principal = None if session is None else session.auth.current
    request = TokenRequest(session=session, principal=principal, tool_name=server)
    token, _ = await StepTokens(settings).resolve(strategy, owner, request)
    try:
        return await use(token)
    except ToolProviderAuthError:
        await evict(settings.token_store, strategy.name, owner, token)
        raise
