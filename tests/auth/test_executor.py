"""``token_auth`` through ``Executor.run`` (a session on SQLite, the loopback model): the
strategy sees the session and its caller, and the token is in neither the model's requests
nor the stored session (checked on the database file's bytes)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

import helix_stream as hs
from tests.loopback import LoopbackServer, text, tool_calls

TOKEN = "tok-SESSION-SECRET-0c9d41"


class Query(BaseModel):
    q: str


async def test_a_session_tool_gets_its_token_and_the_store_never_sees_it(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    asked: list[hs.TokenRequest] = []

    def get_token(request: hs.TokenRequest) -> hs.Token:
        asked.append(request)
        return hs.Token(token=TOKEN)

    async def search(input: Query, ctx: hs.ToolContext) -> str:
        token = await ctx.get_token()
        return f"found {input.q} with a token of {len(token.token)} characters"

    tool = hs.tool(
        name="search",
        input_schema=Query,
        execute=search,
        auth=hs.token_auth(get_token, name="crm-session"),
    )
    store = hs.SQLiteStore(tmp_path / "auth.db")
    agent = hs.Agent(
        name="crm",
        model="openai/loopback",
        tools=[tool],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )
    loopback.script(tool_calls(("search", {"q": "ada"})), text("Found her."))
    result = hs.Executor(store=store).run(agent, "s-1", "find ada", auth="alice")
    assert await result.text() == "Found her."
    (request,) = asked
    assert request.session is not None and request.session.id == "s-1"
    assert request.principal == "alice" and request.tool_name == "search"
    assert all(TOKEN.encode() not in body for body in loopback.requests)
    await store.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert f"found ada with a token of {len(TOKEN)} characters".encode() in stored
    assert TOKEN.encode() not in stored
