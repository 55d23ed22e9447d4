"""The sign-in's pure parts: the signed state, the one-time pending record, the URL, the
callback's completion, and the decisions (park, loop guard) a session applies."""

from __future__ import annotations

import base64
import copy
import json
import time
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

import helix_stream as hs
from helix_stream.auth import (
    AuthorizationResult,
    MemoryPendingAuthorizations,
    ParkForSignIn,
    PendingAuthorization,
    SignIn,
    StateClaims,
    StateSigner,
    begin_authorization,
    code_challenge,
    complete_authorization,
    decide_failure,
)
from tests.auth.oauth_server import OAuthServer

SECRET = "state-secret-for-tests-0123456789abcdef"
OWNER = 'principal:"alice"'


async def park(oauth: OAuthServer, pending: MemoryPendingAuthorizations, **kw: object) -> SignIn:
    sign_in = begin_authorization(
        oauth.strategy(),
        session_id="s-1",
        tool_call_id="call-1",
        owner=OWNER,
        signer=StateSigner(SECRET),
        **kw,  # type: ignore[arg-type]
    )
    await pending.add(sign_in.pending)
    return sign_in


async def follow(url: str) -> dict[str, str]:
    """The user's browser: the authorize endpoint redirects back with code (or error)."""
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
    assert response.status_code == 302
    return {k: v[0] for k, v in parse_qs(urlsplit(response.headers["location"]).query).items()}


def complete(
    oauth: OAuthServer,
    pending: MemoryPendingAuthorizations,
    tokens: hs.MemoryTokenStore,
    state: str,
    **kw: object,
) -> object:
    return complete_authorization(
        state,
        signer=StateSigner(SECRET),
        pending=pending,
        strategies={"loopback": oauth.strategy()},
        token_store=tokens,
        **kw,  # type: ignore[arg-type]
    )


# -- the state ---------------------------------------------------------------------------


def test_a_state_round_trips_and_names_session_call_and_nonce() -> None:
    signer = StateSigner(SECRET)
    claims = StateClaims(session_id="s", tool_call_id="c", nonce="n", expires_at=time.time() + 60)
    assert signer.verify(signer.sign(claims)) == claims


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda s: s[:-2] + ("AA" if not s.endswith("AA") else "BB"), id="signature"),
        pytest.param(
            lambda s: (
                "v1."
                + base64.urlsafe_b64encode(
                    json.dumps({"s": "other", "c": "c", "n": "n", "e": 9e9}).encode()
                )
                .rstrip(b"=")
                .decode()
                + "."
                + s.split(".")[2]
            ),
            id="payload",
        ),
        pytest.param(lambda s: StateSigner("x" * 32).sign(_claims()), id="other-secret"),
        pytest.param(lambda s: "v2" + s[2:], id="version"),
        pytest.param(lambda s: "garbage", id="malformed"),
        pytest.param(lambda s: s + "." * 3000, id="too-long"),
    ],
)
def test_a_forged_or_malformed_state_is_refused(mangle: object) -> None:
    signer = StateSigner(SECRET)
    forged = mangle(signer.sign(_claims()))  # type: ignore[operator]
    with pytest.raises(hs.AuthorizationStateError) as caught:
        signer.verify(forged)
    assert caught.value.http_status == 400 and caught.value.code == "authorization_state_invalid"


def _claims() -> StateClaims:
    return StateClaims(session_id="s", tool_call_id="c", nonce="n", expires_at=time.time() + 60)


def test_an_expired_state_is_refused() -> None:
    signer = StateSigner(SECRET)
    state = signer.sign(_claims())
    with pytest.raises(hs.AuthorizationStateError, match="expired"):
        signer.verify(state, now=time.time() + 61)


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(hs.InvalidRequestError, match="at least 32 bytes"):
        StateSigner("too-short")


# -- begin -------------------------------------------------------------------------------


async def test_the_url_carries_the_challenge_and_the_verifier_stays_server_side(
    oauth: OAuthServer,
) -> None:
    pending = MemoryPendingAuthorizations()
    sign_in = await park(oauth, pending)
    query = parse_qs(urlsplit(sign_in.url).query)
    record = sign_in.pending
    assert query["code_challenge"] == [code_challenge(record.code_verifier)]
    assert record.code_verifier not in sign_in.url
    assert record.code_verifier not in repr(record)
    claims = StateSigner(SECRET).verify(query["state"][0])
    assert (claims.session_id, claims.tool_call_id, claims.nonce) == ("s-1", "call-1", record.nonce)
    assert record.owner == OWNER and record.strategy == "loopback"
    assert PendingAuthorization.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert list(pending.records) == [record.nonce]


# -- complete ----------------------------------------------------------------------------


async def test_a_sign_in_is_completed_once_and_its_token_kept_for_the_owner(
    oauth: OAuthServer,
) -> None:
    pending, tokens = MemoryPendingAuthorizations(), hs.MemoryTokenStore()
    sign_in = await park(oauth, pending)
    callback = await follow(sign_in.url)
    result = await complete(oauth, pending, tokens, callback["state"], code=callback["code"])
    assert result == AuthorizationResult(
        session_id="s-1", tool_call_id="call-1", strategy="loopback", status="authorized"
    )
    token = await tokens.get("loopback", OWNER)
    assert token is not None and token.token == oauth.issued[-1]
    # The exchange sent the verifier that matches the URL's challenge (the server checked).
    assert oauth.token_requests[0]["form"]["code_verifier"] == sign_in.pending.code_verifier
    assert pending.records == {}


async def test_a_replayed_state_is_refused_and_changes_nothing(oauth: OAuthServer) -> None:
    pending, tokens = MemoryPendingAuthorizations(), hs.MemoryTokenStore()
    sign_in = await park(oauth, pending)
    callback = await follow(sign_in.url)
    await complete(oauth, pending, tokens, callback["state"], code=callback["code"])
    kept = copy.copy(tokens._tokens)
    with pytest.raises(hs.AuthorizationStateError, match="already used"):
        await complete(oauth, pending, tokens, callback["state"], code=callback["code"])
    assert tokens._tokens == kept and pending.records == {}
    assert len(oauth.token_requests) == 1  # the replay never reached the token endpoint


@pytest.mark.parametrize("refusal", ["forged", "expired", "no-code-nor-error"])
async def test_a_refused_callback_writes_nothing(oauth: OAuthServer, refusal: str) -> None:
    pending, tokens = MemoryPendingAuthorizations(), hs.MemoryTokenStore()
    sign_in = await park(oauth, pending)
    callback = await follow(sign_in.url)
    records = dict(pending.records)
    state, kw = callback["state"], {"code": callback["code"]}
    if refusal == "forged":
        state = StateSigner("another-secret-of-32-bytes-or-more!").sign(
            StateClaims(
                session_id="s-1",
                tool_call_id="call-1",
                nonce=sign_in.pending.nonce,
                expires_at=time.time() + 60,
            )
        )
    elif refusal == "expired":
        kw["now"] = time.time() + 3600  # type: ignore[assignment]
    else:
        kw = {}
    with pytest.raises(hs.InvalidRequestError) as caught:
        await complete(oauth, pending, tokens, state, **kw)
    assert caught.value.http_status == 400
    assert pending.records == records  # still there: the real callback can still come
    assert tokens._tokens == {} and oauth.token_requests == []


async def test_a_refused_sign_in_becomes_the_calls_error_result(oauth: OAuthServer) -> None:
    pending, tokens = MemoryPendingAuthorizations(), hs.MemoryTokenStore()
    oauth.deny = True
    sign_in = await park(oauth, pending)
    callback = await follow(sign_in.url)
    assert callback["error"] == "access_denied"
    result = await complete(oauth, pending, tokens, callback["state"], error=callback["error"])
    assert result == AuthorizationResult(
        session_id="s-1",
        tool_call_id="call-1",
        strategy="loopback",
        status="refused",
        error_text="The user did not authorize 'loopback' (access_denied); the call was not run.",
    )
    assert tokens._tokens == {} and pending.records == {} and oauth.token_requests == []


async def test_a_failed_exchange_becomes_the_calls_error_result(oauth: OAuthServer) -> None:
    pending, tokens = MemoryPendingAuthorizations(), hs.MemoryTokenStore()
    sign_in = await park(oauth, pending)
    callback = await follow(sign_in.url)
    result = await complete(oauth, pending, tokens, callback["state"], code="code-not-issued")
    assert result.status == "failed"  # type: ignore[attr-defined]
    assert result.error_text == (  # type: ignore[attr-defined]
        "The sign-in to 'loopback' failed (invalid_grant); the call was not run."
    )
    assert tokens._tokens == {}


# -- the decisions a session applies -----------------------------------------------------


def test_an_interactive_miss_parks_and_the_rerun_after_sign_in_does_not(
    oauth: OAuthServer,
) -> None:
    strategy = oauth.strategy()
    miss = hs.AuthorizationRequiredError("sign in", strategy="loopback")
    rejected = hs.TokenRejectedError()
    for error in (miss, rejected):
        assert decide_failure(
            error, strategy=strategy, owner=OWNER, tool_call_id="c", after_sign_in=False
        ) == ParkForSignIn(strategy=strategy, owner=OWNER, tool_call_id="c")
    again = decide_failure(
        rejected, strategy=strategy, owner=OWNER, tool_call_id="c", after_sign_in=True
    )
    assert isinstance(again, hs.TokenRejectedError)
    assert "rejected immediately after sign-in" in str(again)
    still = decide_failure(
        miss, strategy=strategy, owner=OWNER, tool_call_id="c", after_sign_in=True
    )
    assert isinstance(still, hs.AuthorizationRequiredError)
    assert "immediately after sign-in" in str(still)


def test_a_token_auth_failure_and_any_other_error_are_the_calls_error(
    oauth: OAuthServer,
) -> None:
    app = hs.token_auth(lambda r: hs.Token(token="t"), name="app-key")
    miss = hs.AuthorizationRequiredError("no")
    assert (
        decide_failure(miss, strategy=app, owner="app", tool_call_id="c", after_sign_in=False)
        is miss
    )
    other = RuntimeError("boom")
    assert (
        decide_failure(
            other, strategy=oauth.strategy(), owner="app", tool_call_id="c", after_sign_in=False
        )
        is other
    )
