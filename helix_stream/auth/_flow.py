"""The sign-in flow's decisions, as data a session applies.

* :func:`decide_failure`: a call of a session that can wait for sign-in failed with an auth
  error: park it for a sign-in (:class:`ParkForSignIn`), or give it an error result. This is
  where the loop guard lives: a call re-run right after its sign-in never parks again.
* :func:`begin_authorization`: for a parked call, the authorization URL (with a signed state
  and a PKCE challenge) and the :class:`~._pending.PendingAuthorization` to keep.
* :func:`complete_authorization`: a callback came: verify the state, take the pending record
  (once), exchange the code, keep the token, and say what becomes of the call
  (:class:`AuthorizationResult`).

Nothing here writes to a session: the session stores what these functions return.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from .._auth_strategy import AuthStrategy, InteractiveAuth, is_interactive
from .._token import Token
from ..errors import (
    AuthorizationFailedError,
    AuthorizationRequiredError,
    AuthorizationStateError,
    InvalidRequestError,
    TokenRejectedError,
)
from ._oauth import code_challenge, make_code_verifier
from ._pending import PendingAuthorization, PendingAuthorizations
from ._state import StateClaims, StateSigner
from ._store import TokenStore

__all__ = [
    "DEFAULT_SIGN_IN_TTL",
    "AuthorizationResult",
    "ParkForSignIn",
    "SignIn",
    "begin_authorization",
    "complete_authorization",
    "decide_failure",
]

DEFAULT_SIGN_IN_TTL = 600.0  # seconds a sign-in link stays good
MAX_CODE_LENGTH = 4096
_ERROR_CODE = re.compile(r"[a-z0-9_.-]{1,64}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ParkForSignIn:
    """The call waits for the user to sign in to ``strategy`` (for ``owner``'s token).

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        outcome = decide_failure(hs.AuthorizationRequiredError("sign in"), strategy=calendar,
                                 owner="user-1", tool_call_id="call-1", after_sign_in=False)
        assert isinstance(outcome, ParkForSignIn)        # the call waits; the turn pauses
    """

    strategy: InteractiveAuth
    owner: str
    tool_call_id: str


def decide_failure(
    error: Exception,
    *,
    strategy: AuthStrategy,
    owner: str,
    tool_call_id: str,
    after_sign_in: bool,
) -> ParkForSignIn | Exception:
    """What a session that can wait for sign-in does with a call that raised ``error``.

    An AuthorizationRequiredError (a miss, ``require_auth()``) or a TokenRejectedError (the
    token was evicted already) of an interactive strategy parks the call, unless the call
    is the re-run right after its sign-in (``after_sign_in``): then it gets an error result,
    so a user is never sent round a sign-in loop. Anything else is the call's error as is.

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        error = hs.AuthorizationRequiredError("sign in to calendar")
        again = decide_failure(error, strategy=calendar, owner="user-1", tool_call_id="call-1",
                               after_sign_in=True)        # right after a sign-in: no second loop
        assert isinstance(again, hs.AuthorizationRequiredError)
    """
    auth_error = isinstance(error, (AuthorizationRequiredError, TokenRejectedError))
    if not auth_error or not is_interactive(strategy):
        return error
    if not after_sign_in:
        return ParkForSignIn(strategy=strategy, owner=owner, tool_call_id=tool_call_id)
    if isinstance(error, TokenRejectedError):
        return TokenRejectedError(
            f"the token for {strategy.name!r} was rejected immediately after sign-in; "
            "not asking the user to sign in again"
        )
    return AuthorizationRequiredError(
        f"the tool still required authorization for {strategy.name!r} immediately after "
        "sign-in; not asking the user to sign in again",
        strategy=strategy.name,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SignIn:
    """A parked call's sign-in: the ``url`` to show the user, the record to keep.

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        sign_in = begin_authorization(calendar, session_id="session-1", tool_call_id="call-1",
                                      owner="user-1", signer=StateSigner("s" * 32))
        print(sign_in.url)                               # the link the user follows
        await MemoryPendingAuthorizations().add(sign_in.pending)
    """

    url: str
    pending: PendingAuthorization


def begin_authorization(
    strategy: InteractiveAuth,
    *,
    session_id: str,
    tool_call_id: str,
    owner: str,
    signer: StateSigner,
    ttl: float = DEFAULT_SIGN_IN_TTL,
    now: float | None = None,
    verifier: Callable[[str], str] | None = None,
) -> SignIn:
    """A fresh sign-in for a parked call: a one-time nonce, a signed state, a PKCE pair.

    The verifier goes into the returned record only; the URL carries its S256 challenge.
    ``verifier(nonce)`` makes it from the nonce (``signer.code_verifier``: a store that keeps
    the record makes it again rather than keeping it); by default it is random.

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        sign_in = begin_authorization(calendar, session_id="session-1", tool_call_id="call-1",
                                      owner="user-1", signer=StateSigner("s" * 32), ttl=600)
        assert sign_in.url.startswith("https://idp.example/authorize?")
    """
    created = time.time() if now is None else now
    claims = StateClaims(
        session_id=session_id,
        tool_call_id=tool_call_id,
        nonce=secrets.token_urlsafe(24),
        expires_at=created + ttl,
    )
    code_verifier = make_code_verifier() if verifier is None else verifier(claims.nonce)
    url = strategy.authorization_url(signer.sign(claims), code_challenge(code_verifier))
    pending = PendingAuthorization(
        nonce=claims.nonce,
        session_id=session_id,
        tool_call_id=tool_call_id,
        strategy=strategy.name,
        owner=owner,
        code_verifier=code_verifier,
        created_at=created,
        expires_at=claims.expires_at,
    )
    return SignIn(url=url, pending=pending)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorizationResult:
    """What a completed sign-in means for its call.

    Attributes:
        session_id: The session the call belongs to.
        tool_call_id: The parked call.
        strategy: The strategy signed in to.
        status: ``"authorized"``: the token is kept; re-run the call (as the re-run right
            after sign-in). ``"refused"``: the user said no; ``"failed"``: the code exchange
            failed. Either way the call gets ``error_text`` as its error result.
        error_text: The call's error result when it is not authorized (no secret in it).

    Example::

        result = await executor.complete_authorization(state, code)   # from the callback's query
        if result.status == "authorized":
            print("signed in to", result.strategy, "for call", result.tool_call_id)
        else:
            print(result.status, result.error_text)
    """

    session_id: str
    tool_call_id: str
    strategy: str
    status: Literal["authorized", "refused", "failed"]
    error_text: str | None = None


def _check_callback(code: str | None, error: str | None) -> None:
    if (code is None) == (error is None):
        raise InvalidRequestError("a sign-in callback carries either code= or error=, not both")
    if code is not None and (not isinstance(code, str) or not 0 < len(code) <= MAX_CODE_LENGTH):
        raise InvalidRequestError("the sign-in callback's code is missing or too long")


async def complete_authorization(
    state: str,
    *,
    code: str | None = None,
    error: str | None = None,
    signer: StateSigner,
    pending: PendingAuthorizations,
    strategies: Mapping[str, AuthStrategy],
    token_store: TokenStore,
    now: float | None = None,
) -> AuthorizationResult:
    """Finish a sign-in from its callback (``code=``, or the service's ``error=``).

    Raises:
        InvalidRequestError: neither or both of ``code`` and ``error``, or an absurd code.
        AuthorizationStateError: the state is malformed, forged, expired, or was used
            before (replayed). Nothing was written: a refused state takes nothing.

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        from urllib.parse import parse_qs, urlsplit

        signer, pending = StateSigner("s" * 32), MemoryPendingAuthorizations()
        sign_in = begin_authorization(calendar, session_id="session-1", tool_call_id="call-1",
                                      owner="user-1", signer=signer)
        await pending.add(sign_in.pending)
        state = parse_qs(urlsplit(sign_in.url).query)["state"][0]   # what the callback gets
        result = await complete_authorization(state, error="access_denied", signer=signer,
                                              pending=pending, strategies={"calendar": calendar},
                                              token_store=MemoryTokenStore())
    """
    _check_callback(code, error)
    claims = signer.verify(state, now=now)
    record = await pending.take(claims.nonce)
    if record is None or (record.session_id, record.tool_call_id) != (
        claims.session_id,
        claims.tool_call_id,
    ):
        raise AuthorizationStateError("the sign-in state was already used, or is unknown")
    done = {
        "session_id": record.session_id,
        "tool_call_id": record.tool_call_id,
        "strategy": record.strategy,
    }
    if error is not None:
        reason = error if _ERROR_CODE.fullmatch(error) else "error"
        text = f"The user did not authorize {record.strategy!r} ({reason}); the call was not run."
        return AuthorizationResult(**done, status="refused", error_text=text)
    strategy = strategies.get(record.strategy)
    if strategy is None or not is_interactive(strategy):
        text = f"The sign-in to {record.strategy!r} cannot be completed: no such strategy here."
        return AuthorizationResult(**done, status="failed", error_text=text)
    assert code is not None
    try:
        token = await strategy.exchange(code, record.code_verifier)
    except Exception as exc:
        # Only our own error's OAuth code, or the exception's type: never its text.
        reason = exc.error if isinstance(exc, AuthorizationFailedError) else type(exc).__name__
        text = f"The sign-in to {record.strategy!r} failed ({reason}); the call was not run."
        return AuthorizationResult(**done, status="failed", error_text=text)
    if not isinstance(token, Token):
        text = f"The sign-in to {record.strategy!r} failed (no token); the call was not run."
        return AuthorizationResult(**done, status="failed", error_text=text)
    await token_store.put(record.strategy, record.owner, token)
    return AuthorizationResult(**done, status="authorized")
