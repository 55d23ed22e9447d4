"""Tool authorization: how a tool gets a token to act for the user.

A tool declares a strategy (``hs.tool(auth=...)``): :func:`token_auth` for a token source
with no sign-in step, :func:`oauth_auth` (or an object with the :class:`InteractiveAuth`
protocol) for a user's own account at another service. Inside the tool,
``await ctx.get_token()`` resolves it through the per-step cache (:class:`StepTokens`) and
the token store (:class:`MemoryTokenStore`, :class:`EncryptedTokenStore`).

The sign-in side, for a session that parks a call until the user has signed in:
:class:`StateSigner` (the signed one-time ``state``), :class:`PendingAuthorization` and
:class:`PendingAuthorizations` (what the session keeps, the PKCE verifier with it),
:func:`decide_failure` (park, or the loop guard's error), :func:`begin_authorization` (the
URL) and :func:`complete_authorization` (the callback). See the README, "Tools that act for
the user: authorization".

Nothing here imports httpx or cryptography until it is used.
"""

from __future__ import annotations

from .._auth_strategy import (
    AuthStrategy,
    InteractiveAuth,
    TokenAuth,
    check_strategy,
    is_interactive,
    strategies_by_name,
    token_auth,
)
from .._token import Token, TokenRequest
from ._cache import DEFAULT_AUTH, AuthSettings, CallAuth, StepTokens, TokenSource
from ._encrypted import EncryptedTokenStore, KeyValueStore, MemoryKeyValueStore
from ._flow import (
    DEFAULT_SIGN_IN_TTL,
    AuthorizationResult,
    ParkForSignIn,
    SignIn,
    begin_authorization,
    complete_authorization,
    decide_failure,
)
from ._oauth import OAuthStrategy, code_challenge, make_code_verifier, oauth_auth
from ._pending import MemoryPendingAuthorizations, PendingAuthorization, PendingAuthorizations
from ._state import StateClaims, StateSigner
from ._store import APP_OWNER, MemoryTokenStore, TokenStore, token_key, token_owner

__all__ = [
    "APP_OWNER",
    "DEFAULT_AUTH",
    "DEFAULT_SIGN_IN_TTL",
    "AuthSettings",
    "AuthStrategy",
    "AuthorizationResult",
    "CallAuth",
    "EncryptedTokenStore",
    "InteractiveAuth",
    "KeyValueStore",
    "MemoryKeyValueStore",
    "MemoryPendingAuthorizations",
    "MemoryTokenStore",
    "OAuthStrategy",
    "ParkForSignIn",
    "PendingAuthorization",
    "PendingAuthorizations",
    "SignIn",
    "StateClaims",
    "StateSigner",
    "StepTokens",
    "Token",
    "TokenAuth",
    "TokenRequest",
    "TokenSource",
    "TokenStore",
    "begin_authorization",
    "check_strategy",
    "code_challenge",
    "complete_authorization",
    "decide_failure",
    "is_interactive",
    "make_code_verifier",
    "oauth_auth",
    "strategies_by_name",
    "token_auth",
    "token_key",
    "token_owner",
]
