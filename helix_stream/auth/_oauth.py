"""``hs.oauth_auth(...)``: OAuth 2.0 authorization code with PKCE (RFC 6749 §4.1, RFC 7636).

This module owns the wire side of a sign-in: the authorization URL, and the two calls to the
token endpoint (the code exchange, RFC 6749 §4.1.3, and the refresh, §6), made with httpx,
imported on first use. The PKCE pair is made here too (method S256 only: "plain" would put
the verifier itself in the URL).

Nothing of a token endpoint's answer reaches an error message but its OAuth ``error`` code:
the answer may hold tokens.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from .._token import Token
from ..errors import AuthorizationFailedError

__all__ = ["OAuthStrategy", "code_challenge", "make_code_verifier", "oauth_auth"]

# The parameters the flow itself sets: extra authorize params may not override them.
_RESERVED = frozenset(
    {
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
    }
)
_ERROR_CODE = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def make_code_verifier() -> str:
    """A fresh PKCE code verifier: 64 characters of [A-Za-z0-9_-] (RFC 7636 §4.1).

    Example::

        verifier = make_code_verifier()                 # PKCE: kept by the app, never in the URL
        challenge = code_challenge(verifier)            # S256: what the authorize URL carries
    """
    return secrets.token_urlsafe(48)


def code_challenge(verifier: str) -> str:
    """The S256 code challenge of ``verifier`` (RFC 7636 §4.2).

    Example::

        challenge = code_challenge(make_code_verifier())
        assert "=" not in challenge                     # base64url without padding
    """
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthStrategy:
    """An interactive OAuth 2.0 strategy (see :func:`oauth_auth`).

    Example::

        calendar = hs.oauth_auth(name="calendar", authorize_url="https://idp.example/authorize",
                                 token_url="https://idp.example/token", client_id="app",
                                 redirect_uri="https://chat.example/api/auth/callback")
        assert isinstance(calendar, OAuthStrategy)
        url = calendar.authorization_url("signed-state", code_challenge(make_code_verifier()))
    """

    name: str
    authorize_url: str
    token_url: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()
    redirect_uri: str
    authorize_params: tuple[tuple[str, str], ...] = ()
    client_auth: Literal["basic", "post"] = "basic"
    timeout: float = 10.0

    def authorization_url(self, state: str, code_challenge: str) -> str:
        """The authorize endpoint's URL for one sign-in."""
        parts = urlsplit(self.authorize_url)
        query = [
            *parse_qsl(parts.query, keep_blank_values=True),
            ("response_type", "code"),
            ("client_id", self.client_id),
            ("redirect_uri", self.redirect_uri),
            *([("scope", " ".join(self.scopes))] if self.scopes else []),
            ("state", state),
            ("code_challenge", code_challenge),
            ("code_challenge_method", "S256"),
            *self.authorize_params,
        ]
        return urlunsplit(parts._replace(query=urlencode(query)))

    async def exchange(self, code: str, code_verifier: str) -> Token:
        """Exchange an authorization code for a token (RFC 6749 §4.1.3).

        Raises:
            AuthorizationFailedError: the endpoint refused, or did not answer with a token.
        """
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": code_verifier,
        }
        return self._token(await self._post(form, "the code exchange"), previous=None)

    async def refresh(self, token: Token) -> Token:
        """A fresh token for an expired one, from its refresh token (RFC 6749 §6).

        Raises:
            AuthorizationFailedError: the token has no refresh token, or the endpoint refused.
        """
        if not token.refresh_token:
            raise AuthorizationFailedError(
                f"the token of {self.name!r} has no refresh token", error="no_refresh_token"
            )
        form = {"grant_type": "refresh_token", "refresh_token": token.refresh_token}
        if self.scopes:
            form["scope"] = " ".join(self.scopes)
        return self._token(await self._post(form, "the refresh"), previous=token)

    async def _post(self, form: dict[str, str], what: str) -> Mapping[str, Any]:
        import httpx

        auth: httpx.Auth | None = None
        if self.client_secret is not None and self.client_auth == "basic":
            auth = httpx.BasicAuth(self.client_id, self.client_secret)  # RFC 6749 §2.3.1
        else:
            form = {**form, "client_id": self.client_id}
            if self.client_secret is not None:
                form["client_secret"] = self.client_secret
        # Some providers answer form-encoded unless asked for JSON.
        headers = {"accept": "application/json"}
        try:
            async with httpx.AsyncClient(timeout=self.timeout, auth=auth) as client:
                response = await client.post(self.token_url, data=form, headers=headers)
        except httpx.HTTPError as exc:
            raise AuthorizationFailedError(
                f"{what} of {self.name!r} could not reach its token endpoint "
                f"({type(exc).__name__})",
                error="unreachable",
            ) from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {}
        if not 200 <= response.status_code < 300 or "error" in body:
            error = str(body.get("error", ""))
            error = error if _ERROR_CODE.fullmatch(error) else f"http_{response.status_code}"
            raise AuthorizationFailedError(
                f"{what} of {self.name!r} was refused by its token endpoint ({error})",
                error=error,
            )
        return body

    def _token(self, body: Mapping[str, Any], *, previous: Token | None) -> Token:
        access = body.get("access_token")
        if not isinstance(access, str) or not access:
            raise AuthorizationFailedError(
                f"the token endpoint of {self.name!r} answered without an access_token",
                error="no_access_token",
            )
        expires_in = body.get("expires_in")
        if isinstance(expires_in, str) and expires_in.isdigit():
            expires_in = int(expires_in)  # some providers send it as a string
        scope = body.get("scope")
        # A refresh may leave the refresh token out: the old one stays good (RFC 6749 §6).
        refresh = body.get("refresh_token")
        if not isinstance(refresh, str):
            refresh = previous.refresh_token if previous is not None else None
        return Token(
            token=access,
            expires_at=time.time() + float(expires_in)
            if isinstance(expires_in, (int, float))
            else None,
            scopes=tuple(scope.split()) if isinstance(scope, str) else self.scopes,
            principal_type="user",
            refresh_token=refresh,
        )


def oauth_auth(
    *,
    name: str,
    authorize_url: str,
    token_url: str,
    client_id: str,
    redirect_uri: str,
    client_secret: str | None = None,
    scopes: Sequence[str] = (),
    authorize_params: Mapping[str, str] | None = None,
    client_auth: Literal["basic", "post"] = "basic",
    timeout: float = 10.0,
) -> OAuthStrategy:
    """An interactive strategy: the user signs in to a service with OAuth 2.0 and PKCE.

    Example::

        github = hs.oauth_auth(
            name="github",
            authorize_url="https://github.com/login/oauth/authorize",
            token_url="https://github.com/login/oauth/access_token",
            client_id=os.environ["GITHUB_CLIENT_ID"],
            client_secret=os.environ["GITHUB_CLIENT_SECRET"],
            scopes=["repo"],
            redirect_uri="https://chat.example.com/api/auth/callback",
        )

        @hs.tool(auth=github)
        async def list_issues(repo: str, ctx: hs.ToolContext) -> list[dict[str, object]]:
            token = await ctx.get_token()
            response = await http.get(f"https://api.github.com/repos/{repo}/issues",
                                      headers={"Authorization": f"Bearer {token.token}"})
            issues: list[dict[str, object]] = response.json()
            return issues

    Args:
        name: Identifies the strategy; tools sharing it share one sign-in.
        authorize_url: The service's authorization endpoint.
        token_url: Its token endpoint (code exchange and refresh).
        client_id: The app's client id at the service.
        redirect_uri: Where the service sends the user back (the app's callback).
        client_secret: The app's client secret; ``None`` for a public client (PKCE alone).
        scopes: What to ask for.
        authorize_params: More query parameters for the authorization URL (``prompt``,
            ``access_type``, ...); they may not replace the flow's own.
        client_auth: How the secret is sent: HTTP Basic (``"basic"``, RFC 6749 §2.3.1) or
            in the form (``"post"``).
        timeout: Seconds for each token endpoint call.

    Raises:
        TypeError: an argument is missing, or an extra param would replace one of the flow's.
    """
    extra = dict(authorize_params or {})
    clash = sorted(_RESERVED & set(extra))
    if clash:
        raise TypeError(f"oauth_auth(authorize_params=...) may not set {', '.join(clash)}")
    for label, value in (
        ("name", name),
        ("authorize_url", authorize_url),
        ("token_url", token_url),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
    ):
        if not isinstance(value, str) or not value:
            raise TypeError(f"oauth_auth() needs {label}= (a non-empty string)")
    if client_auth not in ("basic", "post"):
        raise TypeError("oauth_auth(client_auth=...) is 'basic' or 'post'")
    return OAuthStrategy(
        name=name,
        authorize_url=authorize_url,
        token_url=token_url,
        client_id=client_id,
        client_secret=client_secret,
        scopes=tuple(scopes),
        redirect_uri=redirect_uri,
        authorize_params=tuple((str(k), str(v)) for k, v in extra.items()),
        client_auth=client_auth,
        timeout=timeout,
    )
