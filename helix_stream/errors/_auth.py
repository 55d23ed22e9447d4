"""Errors of tools that act for the user: a sign-in that is needed, a forged or spent sign-in
state, a token a service refused, an OAuth endpoint that refused an exchange."""

from __future__ import annotations

from ._base import HelixError
from ._requests import InvalidRequestError

__all__ = [
    "AuthorizationFailedError",
    "AuthorizationRequiredError",
    "AuthorizationStateError",
    "TokenRejectedError",
]


class AuthorizationStateError(InvalidRequestError):
    """A sign-in callback's ``state`` is forged, expired, malformed or already used; nothing
    was written (README, "Tools that act for the user: authorization").

    Example::

        from helix_stream.errors import AuthorizationStateError

        try:
            await executor.complete_authorization("forged-state", "code")
        except AuthorizationStateError as exc:     # nothing was written
            print(exc.code)                        # authorization_state_invalid
    """

    code = "authorization_state_invalid"
    http_status = 400


class AuthorizationRequiredError(HelixError):
    """A tool needs the user to sign in to a service first (``ctx.get_token()`` found no
    token for an interactive strategy, or the tool called ``ctx.require_auth()``).

    Attributes:
        strategy: The name of the tool's auth strategy.
        tool_name: The tool that asked.

    Example::

        from helix_stream.errors import AuthorizationRequiredError

        @hs.tool(auth=hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                    token_url="https://idp.example/token", client_id="app",
                                    redirect_uri="https://chat.example/api/auth/callback"))
        async def list_events(day: str, ctx: hs.ToolContext) -> str:
            try:
                token = await ctx.get_token()      # in a session, the turn waits for the sign-in
            except AuthorizationRequiredError as exc:
                return f"sign in to {exc.strategy} first"   # outside one: no token yet
            return f"events on {day} for {token.token[:4]}..."
    """

    code = "authorization_required"
    http_status = 401

    def __init__(self, message: str, *, strategy: str = "", tool_name: str = "") -> None:
        super().__init__(message)
        self.strategy = strategy
        self.tool_name = tool_name


class TokenRejectedError(HelixError):
    """The service a tool called refused the tool's token (raise it, or call
    ``ctx.reject_token()``): the token is evicted from the per-step cache and the token
    store, so that the next ``ctx.get_token()`` does not hand it out again.

    Example::

        @hs.tool(auth=hs.token_auth(lambda request: hs.Token(token="crm-key"), name="crm"))
        async def lookup(email: str, ctx: hs.ToolContext) -> str:
            token = await ctx.get_token()
            response = await http.get(CRM_URL, headers={"x-api-key": token.token})
            if response.status_code == 401:
                ctx.reject_token()                 # raises TokenRejectedError; the token is evicted
            return response.text
    """

    code = "token_rejected"
    http_status = 401

    def __init__(self, message: str = "the service refused the token") -> None:
        super().__init__(message)


class AuthorizationFailedError(HelixError):
    """An OAuth token endpoint refused a code exchange or a refresh, or answered with
    something that is not a token.

    Attributes:
        error: The OAuth error code the endpoint gave (``invalid_grant``, ...), or a short
            description of what was wrong with its answer.

    Example::

        from helix_stream.errors import AuthorizationFailedError

        try:
            await executor.complete_authorization(state, code)
        except AuthorizationFailedError as exc:    # the token endpoint refused the code
            print(exc.error)                       # "invalid_grant", ...
    """

    code = "authorization_failed"
    http_status = 502

    def __init__(self, message: str, *, error: str) -> None:
        super().__init__(message)
        self.error = error
