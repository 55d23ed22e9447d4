"""``hs.oauth_auth`` on the wire, against the loopback OAuth server: the authorization URL,
the code exchange (PKCE checked by the server), the refresh, and what a refusal says."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

import helix_stream as hs
from helix_stream.auth import code_challenge, make_code_verifier
from tests.auth.oauth_server import CLIENT_ID, CLIENT_SECRET, OAuthServer


async def sign_in(oauth: OAuthServer, url: str) -> dict[str, list[str]]:
    """Follow an authorization URL as the user's browser would; the callback's query."""
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
    assert response.status_code == 302
    return parse_qs(urlsplit(response.headers["location"]).query)


def test_the_authorization_url_asks_for_a_code_with_an_s256_challenge(oauth: OAuthServer) -> None:
    strategy = oauth.strategy(authorize_params={"prompt": "consent"})
    url = strategy.authorization_url("the-state", "the-challenge")
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == oauth.authorize_url
    assert parse_qs(parts.query) == {
        "response_type": ["code"],
        "client_id": [CLIENT_ID],
        "redirect_uri": ["http://127.0.0.1:9/api/auth/callback"],
        "scope": ["calendar.read"],
        "state": ["the-state"],
        "code_challenge": ["the-challenge"],
        "code_challenge_method": ["S256"],
        "prompt": ["consent"],
    }
    assert CLIENT_SECRET not in url
    assert CLIENT_SECRET not in repr(strategy)


def test_extra_authorize_params_may_not_replace_the_flows_own(oauth: OAuthServer) -> None:
    with pytest.raises(TypeError, match="may not set code_challenge_method, state"):
        oauth.strategy(authorize_params={"state": "x", "code_challenge_method": "plain"})


def test_the_pkce_challenge_is_rfc_7636s_s256() -> None:
    # RFC 7636, Appendix B.
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
    assert code_challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    fresh = make_code_verifier()
    assert 43 <= len(fresh) <= 128 and fresh != make_code_verifier()


@pytest.mark.parametrize("client_auth", ["basic", "post"])
async def test_a_code_is_exchanged_with_its_verifier(oauth: OAuthServer, client_auth: str) -> None:
    strategy = oauth.strategy(client_auth=client_auth)
    verifier = make_code_verifier()
    callback = await sign_in(oauth, strategy.authorization_url("s", code_challenge(verifier)))
    assert callback["state"] == ["s"]
    before = time.time()
    token = await strategy.exchange(callback["code"][0], verifier)
    assert token.token == oauth.issued[-1]
    assert token.principal_type == "user"
    assert token.scopes == ("calendar.read",)
    assert token.refresh_token is not None and token.refresh_token.startswith("rt-")
    assert token.expires_at is not None and before + 3600 <= token.expires_at <= time.time() + 3600
    (request,) = oauth.token_requests
    if client_auth == "basic":
        assert request["authorization"].startswith("Basic ")
        assert "client_secret" not in request["form"]
    else:
        assert request["authorization"] is None
        assert request["form"]["client_secret"] == CLIENT_SECRET


async def test_a_wrong_verifier_is_refused_by_the_server(oauth: OAuthServer) -> None:
    strategy = oauth.strategy()
    callback = await sign_in(oauth, strategy.authorization_url("s", code_challenge("a" * 43)))
    with pytest.raises(hs.AuthorizationFailedError) as caught:
        await strategy.exchange(callback["code"][0], "b" * 43)
    assert caught.value.error == "invalid_grant"
    assert str(caught.value) == (
        "the code exchange of 'loopback' was refused by its token endpoint (invalid_grant)"
    )
    assert callback["code"][0] not in str(caught.value)


async def test_a_wrong_client_secret_is_refused(oauth: OAuthServer) -> None:
    strategy = oauth.strategy(client_secret="not-it")
    with pytest.raises(hs.AuthorizationFailedError) as caught:
        await strategy.exchange("code", "v" * 43)
    assert caught.value.error == "invalid_client"
    assert "not-it" not in str(caught.value)


async def test_a_token_is_refreshed_and_keeps_its_refresh_token_if_none_comes(
    oauth: OAuthServer,
) -> None:
    strategy = oauth.strategy()
    verifier = make_code_verifier()
    callback = await sign_in(oauth, strategy.authorization_url("s", code_challenge(verifier)))
    first = await strategy.exchange(callback["code"][0], verifier)
    oauth.rotate_refresh = False
    second = await strategy.refresh(first)
    assert second.token != first.token and second.token == oauth.issued[-1]
    assert second.refresh_token == first.refresh_token  # the server sent none: kept
    assert oauth.token_requests[-1]["form"]["grant_type"] == "refresh_token"


async def test_a_refused_refresh_and_a_missing_refresh_token_fail_typed(oauth: OAuthServer) -> None:
    strategy = oauth.strategy()
    with pytest.raises(hs.AuthorizationFailedError) as caught:
        await strategy.refresh(hs.Token(token="t", refresh_token="rt-unknown"))
    assert caught.value.error == "invalid_grant"
    with pytest.raises(hs.AuthorizationFailedError) as caught:
        await strategy.refresh(hs.Token(token="t"))
    assert caught.value.error == "no_refresh_token"


async def test_an_unreachable_token_endpoint_fails_typed() -> None:
    strategy = hs.oauth_auth(
        name="gone",
        authorize_url="http://127.0.0.1:9/authorize",
        token_url="http://127.0.0.1:9/token",
        client_id="c",
        redirect_uri="http://127.0.0.1:9/cb",
        timeout=2.0,
    )
    with pytest.raises(hs.AuthorizationFailedError) as caught:
        await strategy.exchange("code", "v" * 43)
    assert caught.value.error == "unreachable"


def test_oauth_auth_needs_its_endpoints() -> None:
    with pytest.raises(TypeError, match="needs token_url="):
        hs.oauth_auth(
            name="x", authorize_url="http://a", token_url="", client_id="c", redirect_uri="r"
        )
