"""What the session tests of tool authorization share: a calendar agent whose tools need an
OAuth sign-in at the loopback OAuth server, the browser's half of a sign-in, and the rows of
a store (to check that a refusal wrote nothing, and that no secret is in them)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.chunks import Chunk, ToolAuthorizationRequest
from tests.auth.oauth_server import CLIENT_SECRET, OAuthServer
from tests.loopback import LoopbackServer

SECRET = "auth-secret-for-the-tests-0123456789abcdef"


class Day(BaseModel):
    day: str


@dataclass
class Calendar:
    """The tools' side: which token each call of list_events ran with, and what else ran."""

    tokens: list[str] = field(default_factory=list)
    times: int = 0
    reject: bool = False  # list_events rejects every token it is given

    def tools(self, strategy: Any, *, needs_approval: bool = False) -> list[hs.Tool]:
        async def list_events(input: Day, ctx: hs.ToolContext) -> dict[str, Any]:
            token = await ctx.get_token()
            self.tokens.append(token.token)
            if self.reject:
                ctx.reject_token()
            return {"day": input.day, "events": ["standup"], "token_chars": len(token.token)}

        def get_time() -> str:
            self.times += 1
            return "09:00"

        events = hs.tool(
            name="list_events",
            input_schema=Day,
            execute=list_events,
            auth=strategy,
            needs_approval=needs_approval,
        )
        return [events, hs.tool(name="get_time", execute=get_time, description="The time.")]


def agent(loopback: LoopbackServer, tools: list[hs.Tool], **kw: Any) -> hs.Agent:
    return hs.Agent(
        name=kw.pop("name", "calendar"),
        system="You read the user's calendar.",
        model="openai/loopback",
        tools=tools,
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        max_retries=0,
        **kw,
    )


def sign_in_links(chunks: list[Chunk]) -> list[ToolAuthorizationRequest]:
    return [c for c in chunks if isinstance(c, ToolAuthorizationRequest)]


async def follow(url: str) -> dict[str, str]:
    """What a browser does with a sign-in link: the OAuth server's answer is a redirect to the
    callback; its query (``state`` and ``code``, or ``error``)."""
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
    assert response.status_code == 302, response.text
    return dict(parse_qsl(urlsplit(response.headers["location"]).query))


def sqlite_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a SQLite file (read on a connection of its own)."""
    conn = sqlite3.connect(path)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: sorted(conn.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}
    finally:
        conn.close()


def secrets_of(oauth: OAuthServer) -> list[str]:
    """What must be found nowhere but the tool and the token store: every token and refresh
    token the server issued, every code, every PKCE verifier, the client secret."""
    found = [CLIENT_SECRET, *oauth.issued]
    for request in oauth.token_requests:
        form = request["form"]
        found += [form[k] for k in ("code", "code_verifier", "refresh_token") if k in form]
    return found


def assert_absent(secrets: list[str], *blobs: bytes | str) -> None:
    assert secrets, "nothing to look for"
    for blob in blobs:
        data = blob.encode() if isinstance(blob, str) else blob
        for secret in secrets:
            assert secret.encode() not in data, f"a secret ({secret[:6]}...) leaked"
