"""Tools that act for the user: a calendar tool with ``auth=hs.oauth_auth(...)`` in a session.

The script starts its own OAuth 2.0 server on 127.0.0.1 (an authorize endpoint that signs the
user in at once, a token endpoint that checks PKCE, and a calendar API that wants the bearer
token), so it runs offline, with the demo model and a SQLite session store:

1. Ada asks about Monday. The tool asks ``await ctx.get_token()``; she has not signed in, so
   the call *parks*: the turn pauses (status ``paused``) and its stream carries the sign-in
   URL (a ``tool-authorization-request`` chunk; ``data-authorization`` on the UI stream).
2. Her browser follows the URL; the service redirects it to the app's callback with a code.
   ``executor.complete_authorization(state, code)`` (what ``GET /api/auth/callback`` calls)
   checks the signed one-time state, exchanges the code with the PKCE verifier and keeps the
   token, encrypted, in the session database.
3. ``executor.run(agent, session_id)`` with no new message: the parked call runs again, alone,
   with the token, and the turn goes on.
4. Another session of Ada's: the token is hers, not the session's, so no sign-in.

Behind the chat server (``create_app``), step 2 is the callback route and step 3 the chat
page resuming; see the README, "Tools that act for the user: authorization".

Run it:

    python examples/tool_auth.py            # the walk-through, with the sign-in URL
    python examples/tool_auth.py --once     # an offline self-check: four lines
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import secrets
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx

import helix_stream as hs
from helix_stream.chunks import ToolAuthorizationRequest, ToolOutputAvailable

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


def outcome(chunks: list[Any]) -> str:
    """What a turn's list_events call ended with (a resumed turn's re-run call comes before
    its first step: read the stream, not the steps)."""
    calls = {c.tool_call_id for c in chunks if getattr(c, "tool_name", None) == "list_events"}
    for chunk in chunks:
        if isinstance(chunk, ToolOutputAvailable) and chunk.tool_call_id in calls:
            return json.dumps(chunk.output)
    return "(not run)"


async def browser(url: str) -> dict[str, str]:
    """The user's browser follows the sign-in link; the service redirects it to the callback,
    whose query holds ``state`` and ``code``."""
    async with httpx.AsyncClient() as client:
        location = (await client.get(url)).headers["location"]
    return dict(parse_qsl(urlsplit(location).query))


async def run(folder: Path, verbose: bool) -> list[str]:
    with oauth_server() as base:
        agent = hs.Agent(name="assistant", model="helix/demo", tools=[calendar_tool(base)])
        store = hs.SQLiteStore(folder / "sessions.db")
        executor = hs.Executor(
            store,
            auth_secret=secrets.token_urlsafe(32),  # the same in every process, in a real app
            token_store=hs.EncryptedTokenStore(store, key=hs.EncryptedTokenStore.generate_key()),
        )
        question = 'List my events for "Monday"'
        chunks = [c async for c in executor.run(agent, "ada-1", question, auth="ada")]
        (link,) = [c for c in chunks if isinstance(c, ToolAuthorizationRequest)]
        status = (await executor.session("ada-1")).status
        lines = [f"turn 1: {status}, waiting for a sign-in to {link.strategy!r}"]
        if verbose:
            lines.append(f"sign in at: {link.url}")
        callback = await browser(link.url)
        result = await executor.complete_authorization(callback["state"], callback["code"])
        lines.append(f"sign-in: {result.status}")
        resumed = [c async for c in executor.run(agent, "ada-1", auth="ada")]  # no new message
        lines.append(f"turn 1 goes on: list_events -> {outcome(resumed)}")
        other = [c async for c in executor.run(agent, "ada-2", question, auth="ada")]
        lines.append(f"another session of ada's: list_events -> {outcome(other)}")
        await store.close()
        stored = b"".join(p.read_bytes() for p in folder.iterdir())
        assert not any(token.encode() in stored for token in _Handler.tokens)  # ciphertext only
        return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="an offline self-check, then exit")
    args = parser.parse_args(argv)
    from helix_stream.models import load_litellm

    load_litellm()  # at startup, not while the first question waits
    with tempfile.TemporaryDirectory() as folder:
        print("\n".join(asyncio.run(run(Path(folder), verbose=not args.once))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
