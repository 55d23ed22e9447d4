"""The signed ``state`` of a sign-in: which session and call it resumes, and a one-time nonce.

A state is ``v1.<payload>.<signature>``: the payload is base64url JSON
(``{"s": session, "c": call, "n": nonce, "e": expiry}``), the signature HMAC-SHA256 of
``v1.<payload>`` with the app's secret. It is signed, not encrypted: it names a session and a
call, which the service the user signs in to may see, and nothing secret (the PKCE verifier
stays server-side, in the pending authorization). That a state is used only once is the
pending authorizations' job (:mod:`._pending`); this module refuses forged, malformed and
expired ones.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from dataclasses import dataclass

from ..errors import AuthorizationStateError, InvalidRequestError

__all__ = ["MAX_STATE_LENGTH", "MIN_SECRET_BYTES", "StateClaims", "StateSigner"]

MIN_SECRET_BYTES = 32
MAX_STATE_LENGTH = 2048  # refused before anything is decoded
_VERSION = "v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class StateClaims:
    """What a verified state names.

    Example::

        import time

        signer = StateSigner("s" * 32)
        claims = StateClaims(session_id="session-1", tool_call_id="call-1", nonce="n-1",
                             expires_at=time.time() + 600)
        assert signer.verify(signer.sign(claims)) == claims
    """

    session_id: str
    tool_call_id: str
    nonce: str
    expires_at: float


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StateSigner:
    """Signs and verifies sign-in states with the app's secret.

    Args:
        secret: At least 32 bytes (a ``str`` counts its UTF-8 bytes), e.g.
            ``secrets.token_urlsafe(32)``, kept with the app's other secrets. Every process
            that completes sign-ins needs the same one.

    Raises:
        InvalidRequestError: the secret is shorter than 32 bytes.

    Example::

        import secrets

        signer = StateSigner(secrets.token_urlsafe(32))   # the same secret in every process
    """

    def __init__(self, secret: str | bytes) -> None:
        key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if len(key) < MIN_SECRET_BYTES:
            raise InvalidRequestError(
                f"the sign-in state secret must be at least {MIN_SECRET_BYTES} bytes "
                "(e.g. secrets.token_urlsafe(32))"
            )
        self._key = key

    def _signature(self, signed: str) -> str:
        return _b64(hmac.new(self._key, signed.encode("ascii"), hashlib.sha256).digest())

    def code_verifier(self, nonce: str) -> str:
        """The PKCE code verifier of the sign-in with ``nonce``: HMAC-SHA256 of the nonce with
        the secret, 43 characters of [A-Za-z0-9_-] (RFC 7636 §4.1).

        Derived, not stored: a session store keeps a pending sign-in without anything secret,
        and only a process with the secret can make the verifier again."""
        digest = hmac.new(self._key, b"pkce\0" + nonce.encode("utf-8"), hashlib.sha256).digest()
        return _b64(digest)

    def sign(self, claims: StateClaims) -> str:
        """The state string for ``claims``."""
        payload = {
            "s": claims.session_id,
            "c": claims.tool_call_id,
            "n": claims.nonce,
            "e": claims.expires_at,
        }
        raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode("utf-8")
        signed = f"{_VERSION}.{_b64(raw)}"
        return f"{signed}.{self._signature(signed)}"

    def verify(self, state: str, *, now: float | None = None) -> StateClaims:
        """The claims of a state this signer made and that has not expired.

        Raises:
            AuthorizationStateError: the state is malformed, forged (bad signature) or
                expired. The message says which, never what the state held.
        """
        if not isinstance(state, str) or not 0 < len(state) <= MAX_STATE_LENGTH:
            raise AuthorizationStateError("the sign-in state is missing or malformed")
        parts = state.split(".")
        if len(parts) != 3 or parts[0] != _VERSION:
            raise AuthorizationStateError("the sign-in state is malformed")
        signed = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._signature(signed), parts[2]):
            raise AuthorizationStateError("the sign-in state is not one this app signed")
        claims = _claims(parts[1])
        if claims.expires_at <= (time.time() if now is None else now):
            raise AuthorizationStateError("the sign-in state has expired: sign in again")
        return claims


def _claims(payload: str) -> StateClaims:
    try:
        data = json.loads(_unb64(payload))
        claims = StateClaims(
            session_id=data["s"], tool_call_id=data["c"], nonce=data["n"], expires_at=data["e"]
        )
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise AuthorizationStateError("the sign-in state is malformed") from None
    if not all(isinstance(v, str) for v in (claims.session_id, claims.tool_call_id, claims.nonce)):
        raise AuthorizationStateError("the sign-in state is malformed")
    if not isinstance(claims.expires_at, (int, float)) or isinstance(claims.expires_at, bool):
        raise AuthorizationStateError("the sign-in state is malformed")
    return claims
