"""A loopback OAuth 2.0 server for tests: authorize + token endpoints, PKCE checked, refresh.

``GET /authorize`` signs the user in at once (or refuses, with ``deny = True``) and answers
302 to the redirect URI with ``code`` and ``state``, as a real authorization server does after
its consent page. ``POST /token`` exchanges a code (one use, the S256 challenge checked
against the verifier, the redirect URI and the client's credentials checked) or a refresh
token, and answers in RFC 6749's JSON. Every token request's body and Authorization header
are recorded, for the "never sent" assertions.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from helix_stream.auth import OAuthStrategy, oauth_auth

CLIENT_ID = "helix-test-client"
CLIENT_SECRET = "cs-LOOPBACK-SECRET-9d2f"


@dataclass
class _Grant:
    challenge: str
    method: str
    client_id: str
    redirect_uri: str
    scope: str


class OAuthServer:
    """Serves ``/authorize`` and ``/token`` on 127.0.0.1 (a background thread)."""

    def __init__(self) -> None:
        self.deny = False
        self.expires_in: int | None = 3600
        self.rotate_refresh = True
        self.codes: dict[str, _Grant] = {}
        self.refresh_tokens: dict[str, str] = {}  # refresh token -> scope
        self.token_requests: list[dict[str, Any]] = []  # form, authorization header
        self.authorize_requests: list[dict[str, str]] = []
        self.issued: list[str] = []  # access tokens, in order
        self._counter = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                if parts.path != "/authorize":
                    self._json(404, {"error": "not_found"})
                    return
                query = dict(parse_qsl(parts.query))
                with server._lock:
                    server.authorize_requests.append(query)
                    location = server._authorize(query)
                self.send_response(302)
                self.send_header("location", location)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                form = dict(parse_qsl(self.rfile.read(length).decode()))
                header = self.headers.get("authorization")
                with server._lock:
                    server.token_requests.append({"form": form, "authorization": header})
                    status, body = server._token(form, header)
                self._json(status, body)

            def _json(self, status: int, body: dict[str, Any]) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def authorize_url(self) -> str:
        return f"{self.base}/authorize"

    @property
    def token_url(self) -> str:
        return f"{self.base}/token"

    def strategy(self, **overrides: Any) -> OAuthStrategy:
        """An ``hs.oauth_auth`` strategy pointed at this server."""
        options: dict[str, Any] = {
            "name": "loopback",
            "authorize_url": self.authorize_url,
            "token_url": self.token_url,
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "scopes": ["calendar.read"],
            "redirect_uri": "http://127.0.0.1:9/api/auth/callback",
            **overrides,
        }
        return oauth_auth(**options)

    def start(self) -> OAuthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reset(self) -> None:
        with self._lock:
            self.deny = False
            self.expires_in = 3600
            self.rotate_refresh = True
            self.codes.clear()
            self.refresh_tokens.clear()
            self.token_requests.clear()
            self.authorize_requests.clear()
            self.issued.clear()

    def _next(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}-{self._counter:04d}"

    def _authorize(self, query: dict[str, str]) -> str:
        redirect = query.get("redirect_uri", "")
        state = query.get("state", "")
        if self.deny:
            return f"{redirect}?{urlencode({'error': 'access_denied', 'state': state})}"
        code = self._next("code")
        self.codes[code] = _Grant(
            challenge=query.get("code_challenge", ""),
            method=query.get("code_challenge_method", ""),
            client_id=query.get("client_id", ""),
            redirect_uri=redirect,
            scope=query.get("scope", ""),
        )
        return f"{redirect}?{urlencode({'code': code, 'state': state})}"

    def _client(self, form: dict[str, str], header: str | None) -> str | None:
        if header and header.startswith("Basic "):
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        return client_id if (client_id, secret) == (CLIENT_ID, CLIENT_SECRET) else None

    def _token(self, form: dict[str, str], header: str | None) -> tuple[int, dict[str, Any]]:
        if self._client(form, header) is None:
            return 401, {"error": "invalid_client"}
        grant = form.get("grant_type")
        if grant == "authorization_code":
            found = self.codes.pop(form.get("code", ""), None)  # a code is good once
            verifier = form.get("code_verifier", "")
            digest = hashlib.sha256(verifier.encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            if (
                found is None
                or found.method != "S256"
                or found.challenge != challenge
                or found.redirect_uri != form.get("redirect_uri")
            ):
                return 400, {"error": "invalid_grant"}
            return 200, self._issue(found.scope)
        if grant == "refresh_token":
            scope = self.refresh_tokens.get(form.get("refresh_token", ""))
            if scope is None:
                return 400, {"error": "invalid_grant"}
            if self.rotate_refresh:
                del self.refresh_tokens[form["refresh_token"]]
            return 200, self._issue(scope, refresh=self.rotate_refresh)
        return 400, {"error": "unsupported_grant_type"}

    def _issue(self, scope: str, *, refresh: bool = True) -> dict[str, Any]:
        access = self._next("at-LOOPBACK-TOKEN")
        self.issued.append(access)
        body: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "scope": scope}
        if self.expires_in is not None:
            body["expires_in"] = self.expires_in
        if refresh:
            token = self._next("rt-LOOPBACK-REFRESH")
            self.refresh_tokens[token] = scope
            body["refresh_token"] = token
        return body


async def sign_in(
    server: OAuthServer, strategy: OAuthStrategy, token_store: Any, owner: str
) -> None:
    """A whole sign-in: park, follow the URL as a browser, complete the callback."""
    import httpx

    from helix_stream.auth import (
        MemoryPendingAuthorizations,
        StateSigner,
        begin_authorization,
        complete_authorization,
    )

    signer, pending = StateSigner("s" * 32), MemoryPendingAuthorizations()
    begun = begin_authorization(
        strategy, session_id="s", tool_call_id="c", owner=owner, signer=signer
    )
    await pending.add(begun.pending)
    async with httpx.AsyncClient() as client:
        location = (await client.get(begun.url)).headers["location"]
    query = dict(parse_qsl(urlsplit(location).query))
    result = await complete_authorization(
        query["state"],
        code=query["code"],
        signer=signer,
        pending=pending,
        strategies={strategy.name: strategy},
        token_store=token_store,
    )
    assert result.status == "authorized"
