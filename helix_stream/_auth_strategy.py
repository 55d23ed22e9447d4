"""Auth strategies: how a tool gets its token (``hs.tool(auth=...)``).

Two kinds, told apart by shape:

* :class:`TokenAuth` (``hs.token_auth(get_token)``): a token source with no sign-in step
  (static API keys, pre-issued JWTs, a token the app already holds);
* an :class:`InteractiveAuth`: an OAuth-style sign-in (``hs.oauth_auth(...)``, or an object of
  the app's own with the same small protocol). Its tokens come only from a sign-in.

A strategy is identified by its ``name``: several tools may share one, and one sign-in (one
stored token) serves them all. This module owns the rule that one name means one strategy.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard, runtime_checkable

from ._token import Token, TokenRequest
from .errors import InvalidRequestError

__all__ = [
    "AuthStrategy",
    "InteractiveAuth",
    "TokenAuth",
    "check_strategy",
    "is_interactive",
    "strategies_by_name",
    "token_auth",
]

GetToken = Callable[[TokenRequest], Token | Awaitable[Token]]


@runtime_checkable
class InteractiveAuth(Protocol):
    """An interactive sign-in (OAuth 2.0 authorization code with PKCE, or the like).

    ``hs.oauth_auth(...)`` is one; an app may bring its own object with these members.
    ``refresh(token) -> Token`` is optional: with it, an expired token is refreshed before a
    new sign-in is asked for.

    Attributes:
        name: Identifies the strategy (tools sharing it share one sign-in).

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        strategy: InteractiveAuth = calendar           # what an interactive strategy offers
        url = strategy.authorization_url("signed-state", code_challenge(make_code_verifier()))
    """

    # Read-only, so that a frozen dataclass (``hs.oauth_auth``'s) is one for a type checker.
    @property
    def name(self) -> str: ...

    def authorization_url(self, state: str, code_challenge: str) -> str:
        """The URL the user follows to sign in (``code_challenge``: PKCE, method S256)."""
        ...

    async def exchange(self, code: str, code_verifier: str) -> Token:
        """Exchange the callback's ``code`` (and the PKCE verifier) for a token."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenAuth:
    """A token source with no sign-in step (see :func:`token_auth`).

    Example::

        crm = hs.token_auth(lambda request: hs.Token(token=os.environ["CRM_API_KEY"]), name="crm")
        assert isinstance(crm, TokenAuth) and crm.name == "crm"
    """

    name: str
    get_token: GetToken

    async def fetch(self, request: TokenRequest) -> Token:
        """Call ``get_token`` (sync or async) and check that it gave a :class:`Token`."""
        token = self.get_token(request)
        if inspect.isawaitable(token):
            token = await token
        if not isinstance(token, Token):
            raise InvalidRequestError(
                f"the get_token of auth strategy {self.name!r} returned a "
                f"{type(token).__name__}, not an hs.Token"
            )
        return token


AuthStrategy = TokenAuth | InteractiveAuth


def token_auth(get_token: GetToken, *, name: str | None = None) -> TokenAuth:
    """A strategy that gets its token from ``get_token``, with no sign-in step.

    Example::

        def crm_key(request: hs.TokenRequest) -> hs.Token:
            return hs.Token(token=os.environ["CRM_API_KEY"])

        @hs.tool(auth=hs.token_auth(crm_key))
        async def lookup(customer: str, ctx: hs.ToolContext) -> dict[str, object]:
            token = await ctx.get_token()
            response = await http.get(CRM_URL, params={"q": customer},
                                      headers={"x-api-key": token.token})
            found: dict[str, object] = response.json()
            return found

    Args:
        get_token: ``get_token(request: hs.TokenRequest) -> hs.Token``, sync or async. It is
            called at most once per step for each principal; its token is kept in the token
            store until it expires, so it should depend on the principal only.
        name: Identifies the strategy (tools sharing a name share tokens). Defaults to the
            function's qualified name; a lambda or a nested function needs one.

    Raises:
        TypeError: ``get_token`` is not callable, or it needs ``name=``.
    """
    if not callable(get_token):
        raise TypeError("token_auth() takes a function: token_auth(get_token)")
    if name is None:
        qualname = getattr(get_token, "__qualname__", "")
        if not qualname or "<" in qualname:
            # Two closures of one factory share a qualified name: they would share tokens.
            raise TypeError(
                f"token_auth({qualname or type(get_token).__name__}) needs name=: a lambda or "
                "a nested function has no name of its own that tells it apart"
            )
        name = f"{getattr(get_token, '__module__', '')}.{qualname}"
    _check_name(name)
    return TokenAuth(name=name, get_token=get_token)


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not name.strip():
        raise TypeError("an auth strategy's name must be a non-empty string")


def is_interactive(strategy: AuthStrategy) -> TypeGuard[InteractiveAuth]:
    """Whether ``strategy`` gets its tokens from a sign-in.

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        assert is_interactive(calendar)
        assert not is_interactive(hs.token_auth(lambda request: hs.Token(token="k"), name="crm"))
    """
    return not isinstance(strategy, TokenAuth)


def check_strategy(strategy: Any, *, tool_name: str) -> AuthStrategy:
    """``strategy`` if it is one (``Tool(auth=...)`` calls this).

    Raises:
        TypeError: it is neither a ``token_auth`` nor an interactive strategy.

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        strategy = check_strategy(calendar, tool_name="list_events")   # refuses what is not one
    """
    if isinstance(strategy, TokenAuth):
        return strategy
    if isinstance(strategy, InteractiveAuth):
        _check_name(strategy.name)
        return strategy
    raise TypeError(
        f"tool {tool_name!r}: auth= takes hs.token_auth(...), hs.oauth_auth(...) or an object "
        "with name, authorization_url(state, code_challenge) and async exchange(code, "
        f"code_verifier); got {type(strategy).__name__}"
    )


def strategies_by_name(tools: Mapping[str, Any]) -> dict[str, AuthStrategy]:
    """The auth strategies of ``tools`` (a ``{name: Tool}`` dict), by strategy name.

    Raises:
        InvalidRequestError: two different strategies share a name (their tokens would be
            handed to each other's tools).

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        @hs.tool(auth=calendar)
        async def list_events(day: str, ctx: hs.ToolContext) -> str:
            return day

        assert set(strategies_by_name({"list_events": list_events})) == {"calendar"}
    """
    found: dict[str, AuthStrategy] = {}
    for tool in tools.values():
        strategy = getattr(tool, "auth", None)
        if strategy is None:
            continue
        seen = found.setdefault(strategy.name, strategy)
        if seen is not strategy and seen != strategy:
            raise InvalidRequestError(
                f"two different auth strategies are named {strategy.name!r} (tool "
                f"{tool.name!r} has one of them): give each its own name, or share one object"
            )
    return found
