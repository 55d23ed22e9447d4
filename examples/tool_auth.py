"""Tools that act for the user: a calendar tool with ``auth=hs.oauth_auth(...)``.

The script starts its own OAuth 2.0 server on 127.0.0.1 (an authorize endpoint that signs the
user in at once, a token endpoint that checks PKCE, and a calendar API that wants the bearer
token), so it runs offline, with the demo model:

1. The tool asks ``await ctx.get_token()`` before anyone has signed in: outside a session
   nothing can wait for a sign-in, so the call ends with ``AuthorizationRequiredError``, and
   the model is told so.
2. The app runs the sign-in: ``begin_authorization`` gives the URL (a signed one-time state, a
   PKCE challenge); a browser follows it; ``complete_authorization`` checks the state,
   exchanges the code and keeps the token, encrypted, in the token store.
3. The same question again: the tool gets the token and calls the calendar API with it.

A session that parks its turn on the sign-in and re-runs the call by itself is not wired into
``Executor.run`` yet; this example drives the sign-in by hand (README, "Tools that act for the
user: authorization").

Run it:

    python examples/tool_auth.py            # the walk-through, with the sign-in URL
    python examples/tool_auth.py --once     # an offline self-check: three lines
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import secrets
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx

import helix_stream as hs
from helix_stream.auth import (
    APP_OWNER,
    MemoryKeyValueStore,
    MemoryPendingAuthorizations,
    StateSigner,
    begin_authorization,
    complete_authorization,
    is_interactive,
)

CLIENT_ID, CLIENT_SECRET = "calendar-demo", "demo-client-secret"
EVENTS = {"Monday": ["09:00 stand-up", "14:00 design review"]}


class _Handler(BaseHTTPRequestHandler):
    """The loopback service: /authorize, /token (PKCE checked) and /calendar (bearer)."""

    # Shared by the handler's instances (one per request): the service's whole state.
    codes: ClassVar[dict[str, str]] = {}  # code -> its PKCE challenge
    tokens: ClassVar[set[str]] = set()

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query))
        if url.path == "/authorize":  # the user signs in and consents at once
            code = secrets.token_urlsafe(16)
            self.codes[code] = query["code_challenge"]
            back = urlencode({"code": code, "state": query["state"]})
            self._send(302, b"", location=f"{query['redirect_uri']}?{back}")
        elif url.path == "/calendar":
            bearer = self.headers.get("authorization", "").removeprefix("Bearer ")
            if bearer not in self.tokens:
                self._send(401, b'{"error": "invalid_token"}')
                return
            self._send(200, json.dumps(EVENTS.get(query.get("day", ""), [])).encode())

    def do_POST(self) -> None:
        form = dict(parse_qsl(self.rfile.read(int(self.headers["content-length"])).decode()))
        verifier = form.get("code_verifier", "").encode()
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
        basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        client_ok = self.headers.get("authorization") == f"Basic {basic}"
        if not client_ok or self.codes.pop(form.get("code", ""), None) != challenge.decode():
            self._send(400, b'{"error": "invalid_grant"}')
            return
        token = secrets.token_urlsafe(24)
        self.tokens.add(token)
        body = {"access_token": token, "token_type": "Bearer", "expires_in": 3600}
        self._send(200, json.dumps(body).encode())

    def _send(self, status: int, body: bytes, location: str | None = None) -> None:
        self.send_response(status)
        if location is not None:
            self.send_header("location", location)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def oauth_server() -> Iterator[str]:
    """The loopback service on a free port, for the ``with`` block; yields its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def calendar_tool(base: str) -> hs.Tool:
    calendar = hs.oauth_auth(
        name="calendar",
        authorize_url=f"{base}/authorize",
        token_url=f"{base}/token",
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        scopes=["events.read"],
        redirect_uri="http://127.0.0.1:8000/api/auth/callback",
    )

    @hs.tool(auth=calendar)
    async def list_events(day: str, ctx: hs.ToolContext) -> list[str]:
        """List the user's calendar events of a day."""
        token = await ctx.get_token()
        async with httpx.AsyncClient() as client:
            headers = {"authorization": f"Bearer {token.token}"}
            response = await client.get(f"{base}/calendar", params={"day": day}, headers=headers)
        if response.status_code == 401:
            ctx.reject_token()  # evicted: the next call asks for a sign-in again
        return list(response.json())

    return list_events


async def ask(tool: hs.Tool, store: hs.TokenStore) -> str:
    """Ask the demo model about Monday; what the tool call ended with."""
    result = hs.stream_text(
        model="helix/demo", prompt='List my events for "Monday"', tools=[tool], token_store=store
    )
    await result.text()
    (outcome,) = (await result.steps())[0].tool_results
    if outcome.status == "error":
        return (outcome.error or "").split(": ")[1]  # the error's class
    return json.dumps(outcome.output)


async def sign_in(tool: hs.Tool, store: hs.TokenStore) -> tuple[str, str]:
    """The sign-in, driven by the app: the URL, the browser, the callback. Returns the
    result's status and the URL the user followed."""
    assert tool.auth is not None and is_interactive(tool.auth)
    signer, pending = StateSigner(secrets.token_urlsafe(32)), MemoryPendingAuthorizations()
    begun = begin_authorization(
        tool.auth, session_id="cli", tool_call_id="sign-in", owner=APP_OWNER, signer=signer
    )
    await pending.add(begun.pending)  # the PKCE verifier stays here, never in the URL
    async with httpx.AsyncClient() as browser:  # the user's browser follows the link
        location = (await browser.get(begun.url)).headers["location"]
    callback = dict(parse_qsl(urlsplit(location).query))
    result = await complete_authorization(
        callback["state"],
        code=callback["code"],
        signer=signer,
        pending=pending,
        strategies={tool.auth.name: tool.auth},
        token_store=store,
    )
    return result.status, begun.url


async def run(verbose: bool) -> list[str]:
    with oauth_server() as base:
        tool = calendar_tool(base)
        table = MemoryKeyValueStore()  # a database table, in a real app
        store = hs.EncryptedTokenStore(table, key=hs.EncryptedTokenStore.generate_key())
        lines = [f"before sign-in: list_events -> {await ask(tool, store)}"]
        status, url = await sign_in(tool, store)
        if verbose:
            lines.append(f"sign in at: {url}")
        lines.append(f"sign-in: {status}")
        lines.append(f"after sign-in: list_events -> {await ask(tool, store)}")
        rows = b"".join(table.rows.values())
        assert not any(token.encode() in rows for token in _Handler.tokens)  # ciphertext only
        return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="an offline self-check, then exit")
    args = parser.parse_args(argv)
    from helix_stream.models import load_litellm

    load_litellm()  # at startup, not while the first question waits
    print("\n".join(asyncio.run(run(verbose=not args.once))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
