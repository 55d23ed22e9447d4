"""A call that needs a sign-in parks its turn (``Executor.run`` on SQLite, the loopback model
and the loopback OAuth server, real HTTP): the step's other calls keep their results, the
session is paused, ``session.waiting`` names the sign-in, ``complete_authorization`` takes the
callback, and the next run re-runs only that call, once, with the token. No token, code,
verifier or client secret is in the model's requests, the database file or the hook events."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.auth import StateSigner
from helix_stream.chunks import ToolOutputAvailable
from helix_stream.errors import AuthorizationStateError, InvalidRequestError, StateError
from tests.auth._session import (
    SECRET,
    Calendar,
    Day,
    agent,
    assert_absent,
    follow,
    secrets_of,
    sign_in_links,
    sqlite_rows,
)
from tests.auth.oauth_server import OAuthServer
from tests.loopback import LoopbackServer, text, tool_calls

CALL = "call_0_list_events"


def waiting_hook(events: list[dict[str, Any]]) -> hs.Hook:
    def on_waiting(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        events.append(dict(event.data))

    return hs.define_hook(events={"session.waiting": on_waiting})


async def test_a_call_parks_on_sign_in_and_the_next_run_re_runs_only_it(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar, events = Calendar(), []
    store = hs.SQLiteStore(tmp_path / "s.db")
    executor = hs.Executor(store, auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy()), hooks=[waiting_hook(events)])
    loopback.script(
        tool_calls(("list_events", {"day": "monday"}), ("get_time", {})),
        text("You have a standup."),
    )
    chunks = [c async for c in executor.run(bot, "s-1", "What is on monday?", auth="alice")]

    (link,) = sign_in_links(chunks)
    assert (link.tool_call_id, link.strategy) == (CALL, "loopback")
    assert link.url.startswith(oauth.authorize_url + "?")
    outputs = [c for c in chunks if isinstance(c, ToolOutputAvailable)]
    assert [c.tool_call_id for c in outputs] == ["call_1_get_time"]  # the other call kept its
    assert calendar.tokens == [] and calendar.times == 1
    assert (await executor.session("s-1")).status == "paused"
    (waiting,) = events
    assert waiting["wait"] == "authorization" and waiting["pending"] == [CALL]
    assert (waiting["strategy"], waiting["url"]) == ("loopback", link.url)
    assert len(loopback.requests) == 1

    # Nothing can go on before the sign-in: refused, and nothing is written.
    before = sqlite_rows(tmp_path / "s.db")
    with pytest.raises(StateError, match="still waiting for the user to sign in to 'loopback'"):
        await executor.start(bot, "s-1", auth="alice")
    assert sqlite_rows(tmp_path / "s.db") == before

    query = await follow(link.url)
    result = await executor.complete_authorization(query["state"], query["code"])
    assert (result.status, result.session_id, result.tool_call_id) == ("authorized", "s-1", CALL)
    assert len(loopback.requests) == 1  # the callback calls no model

    answer = await executor.run(bot, "s-1", auth="alice").text()
    assert answer == "You have a standup."
    assert calendar.tokens == [oauth.issued[0]] and calendar.times == 1  # once, each
    assert (await executor.session("s-1")).status == "idle"
    first_body, second_body = loopback.bodies()
    # Prompt-cache stability: the first request's messages and tools, byte for byte, again.
    sent = first_body["messages"]
    assert json.dumps(second_body["messages"][: len(sent)]) == json.dumps(sent)
    assert json.dumps(second_body["tools"]) == json.dumps(first_body["tools"])
    second = second_body["messages"]
    results = {m["tool_call_id"]: m["content"] for m in second if m["role"] == "tool"}
    assert results == {
        CALL: json.dumps({"day": "monday", "events": ["standup"], "token_chars": 22}),
        "call_1_get_time": "09:00",
    }
    await store.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert_absent(secrets_of(oauth), *loopback.requests, stored, json.dumps(events))


async def test_a_refused_sign_in_is_the_calls_error_result_and_the_turn_goes_on(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar = Calendar()
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy()))
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("Sorry, I cannot."))
    (link,) = sign_in_links([c async for c in executor.run(bot, "s-1", "Monday?")])
    oauth.deny = True
    query = await follow(link.url)
    assert query["error"] == "access_denied" and "code" not in query
    result = await executor.complete_authorization(query["state"], error=query["error"])
    assert result.status == "refused"
    assert await executor.run(bot, "s-1").text() == "Sorry, I cannot."
    assert calendar.tokens == [] and oauth.token_requests == []
    tool = [m for m in loopback.bodies()[1]["messages"] if m["role"] == "tool"]
    assert tool == [
        {
            "role": "tool",
            "tool_call_id": CALL,
            "content": "The user did not authorize 'loopback' (access_denied); the call was not run.",
        }
    ]
    assert (await executor.session("s-1")).status == "idle"


async def test_the_loop_guard_a_token_rejected_right_after_sign_in_does_not_park_again(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar = Calendar(reject=True)
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy()))
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("It did not work."))
    (link,) = sign_in_links([c async for c in executor.run(bot, "s-1", "Monday?")])
    query = await follow(link.url)
    await executor.complete_authorization(query["state"], query["code"])

    chunks = [c async for c in executor.run(bot, "s-1")]
    assert sign_in_links(chunks) == []  # never sent round a sign-in loop
    assert calendar.tokens == [oauth.issued[0]]
    assert (await executor.session("s-1")).status == "idle"
    (tool,) = [m for m in loopback.bodies()[1]["messages"] if m["role"] == "tool"]
    assert "rejected immediately after sign-in" in tool["content"]
    owner = 'principal:"alice"'
    assert await executor.token_store.get("loopback", owner) is None  # evicted
    assert await executor.token_store.get("loopback", "session:s-1") is None
    assert_absent(secrets_of(oauth), *loopback.requests)


async def test_a_rejected_token_is_evicted_and_the_call_parks_for_a_new_sign_in(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar = Calendar(reject=True)
    tokens = hs.MemoryTokenStore()
    stale = hs.Token(token="at-STALE-TOKEN-1", principal_type="user")
    await tokens.put("loopback", 'principal:"alice"', stale)
    executor = hs.Executor(
        hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET, token_store=tokens
    )
    bot = agent(loopback, calendar.tools(oauth.strategy()))
    loopback.script(tool_calls(("list_events", {"day": "monday"})))
    chunks = [c async for c in executor.run(bot, "s-1", "Monday?", auth="alice")]
    assert calendar.tokens == ["at-STALE-TOKEN-1"]
    assert len(sign_in_links(chunks)) == 1  # not right after a sign-in: parked for one
    assert await tokens.get("loopback", 'principal:"alice"') is None
    assert (await executor.session("s-1")).status == "paused"
    assert b"at-STALE-TOKEN-1" not in b"".join(loopback.requests)


async def test_an_expired_token_is_refreshed_before_the_re_run(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    oauth.expires_in = 5  # within the 30 s leeway: expired as soon as it is issued
    calendar = Calendar()
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy()))
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("Done."))
    (link,) = sign_in_links([c async for c in executor.run(bot, "s-1", "Monday?")])
    query = await follow(link.url)
    await executor.complete_authorization(query["state"], query["code"])
    assert await executor.run(bot, "s-1").text() == "Done."
    grants = [r["form"]["grant_type"] for r in oauth.token_requests]
    assert grants == ["authorization_code", "refresh_token"]
    assert calendar.tokens == [oauth.issued[1]]  # the refreshed one


async def test_three_calls_of_two_tools_sharing_a_strategy_ask_it_once_per_step(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    asked: list[hs.TokenRequest] = []

    async def get_token(request: hs.TokenRequest) -> hs.Token:
        asked.append(request)
        return hs.Token(token="tok-SHARED-SECRET-77")

    crm = hs.token_auth(get_token, name="crm")
    seen: list[str] = []

    async def lookup(input: Day, ctx: hs.ToolContext) -> str:
        seen.append((await ctx.get_token()).token)
        return "ok"

    tools = [
        hs.tool(name="lookup", input_schema=Day, execute=lookup, auth=crm),
        hs.tool(name="lookup_again", input_schema=Day, execute=lookup, auth=crm),
    ]
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    loopback.script(
        tool_calls(
            ("lookup", {"day": "a"}), ("lookup_again", {"day": "b"}), ("lookup", {"day": "c"})
        ),
        text("Found."),
        tool_calls(("lookup", {"day": "d"})),
        text("Again."),
    )
    bot = agent(loopback, tools)
    assert await executor.run(bot, "s-1", "Find them.", auth="bob").text() == "Found."
    assert len(asked) == 1 and len(seen) == 3
    assert asked[0].principal == "bob" and asked[0].session is not None
    assert await executor.run(bot, "s-2", "Again.", auth="bob").text() == "Again."
    assert len(asked) == 1 and len(seen) == 4  # from the token store: bob's, in any session
    assert b"tok-SHARED-SECRET-77" not in b"".join(loopback.requests)


async def test_without_an_auth_secret_a_miss_is_the_calls_error(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar = Calendar()
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"))
    bot = agent(loopback, calendar.tools(oauth.strategy()))
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("I cannot."))
    chunks = [c async for c in executor.run(bot, "s-1", "Monday?")]
    assert sign_in_links(chunks) == []
    (tool,) = [m for m in loopback.bodies()[1]["messages"] if m["role"] == "tool"]
    assert "AuthorizationRequiredError" in tool["content"]
    assert "Executor(auth_secret=...)" in tool["content"]
    assert (await executor.session("s-1")).status == "idle"


async def test_a_new_message_cancels_a_call_waiting_for_its_sign_in(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar = Calendar()
    store = hs.SQLiteStore(tmp_path / "s.db")
    executor = hs.Executor(store, auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy()))
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("Never mind then."))
    (link,) = sign_in_links([c async for c in executor.run(bot, "s-1", "Monday?")])
    assert await executor.run(bot, "s-1", "Forget it.").text() == "Never mind then."
    tool = [m for m in loopback.bodies()[1]["messages"] if m["role"] == "tool"]
    assert json.loads(tool[0]["content"])["message"] == "No sign-in came before the next message."
    # A late callback still signs the user in, and leaves the session as it is.
    query = await follow(link.url)
    result = await executor.complete_authorization(query["state"], query["code"])
    assert result.status == "authorized"
    meta = (await executor.session("s-1")).meta
    assert not [k for k in meta if k.startswith("helix.answer.")]
    assert calendar.tokens == []


async def test_an_approved_call_without_a_token_parks_with_no_model_call(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar = Calendar()
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy(), needs_approval=True))
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("A standup."))
    await executor.run(bot, "s-1", "Monday?").consume()
    assert (await executor.session("s-1")).status == "paused"
    answer = hs.ApprovalAnswer(approval_id=f"approval-{CALL}", approved=True)
    chunks = [c async for c in executor.run(bot, "s-1", answers=[answer])]
    (link,) = sign_in_links(chunks)
    assert len(loopback.requests) == 1  # paused again at once: no model call
    assert (await executor.session("s-1")).status == "paused"
    query = await follow(link.url)
    await executor.complete_authorization(query["state"], query["code"])
    # What a chat client sends again (the approval it saw) does not undo the sign-in.
    assert await executor.run(bot, "s-1", answers=[answer]).text() == "A standup."
    assert calendar.tokens == [oauth.issued[0]]


async def test_one_sign_in_serves_every_call_waiting_on_its_strategy(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar = Calendar()
    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy()))
    loopback.script(
        tool_calls(("list_events", {"day": "monday"}), ("list_events", {"day": "tuesday"})),
        text("Two standups."),
    )
    links = sign_in_links([c async for c in executor.run(bot, "s-1", "This week?")])
    assert [link.tool_call_id for link in links] == [CALL, "call_1_list_events"]
    query = await follow(links[1].url)
    await executor.complete_authorization(query["state"], query["code"])
    assert await executor.run(bot, "s-1").text() == "Two standups."
    assert calendar.tokens == [oauth.issued[0]] * 2


@pytest.mark.parametrize("tamper", ["forged", "replayed", "expired", "both", "no_secret"])
async def test_a_bad_state_is_refused_and_nothing_is_written(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path, tamper: str
) -> None:
    path = tmp_path / "s.db"
    ttl = 1.0 if tamper == "expired" else 600.0
    executor = hs.Executor(hs.SQLiteStore(path), auth_secret=SECRET, sign_in_ttl=ttl)
    bot = agent(loopback, Calendar().tools(oauth.strategy()))
    loopback.script(tool_calls(("list_events", {"day": "monday"})))
    (link,) = sign_in_links([c async for c in executor.run(bot, "s-1", "Monday?")])
    query = await follow(link.url)
    state, code = query["state"], query["code"]
    if tamper == "replayed":
        await executor.complete_authorization(state, code)
    elif tamper == "forged":
        head, payload, _ = state.split(".")
        forged = StateSigner("another-apps-secret-0123456789abcdef").sign(
            StateSigner(SECRET).verify(state)
        )
        state = f"{head}.{payload}.{forged.split('.')[2]}"
    elif tamper == "expired":
        await asyncio.sleep(1.1)
    elif tamper == "no_secret":
        executor = hs.Executor(hs.SQLiteStore(path))
    before = sqlite_rows(path)
    tokens_before = await executor.token_store.get("loopback", "session:s-1")
    expected: type[Exception] = AuthorizationStateError
    if tamper == "both":
        expected = InvalidRequestError
    with pytest.raises(expected) as raised:
        await executor.complete_authorization(
            state, code, error="access_denied" if tamper == "both" else None
        )
    assert sqlite_rows(path) == before
    assert await executor.token_store.get("loopback", "session:s-1") == tokens_before
    assert raised.value.http_status == 400
    assert code not in str(raised.value) and state not in str(raised.value)


async def test_a_call_re_run_after_its_sign_in_fires_action_result_in_the_same_turn(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar, seen = Calendar(), []

    def on_event(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        if event.type == "action.result":
            seen.append((event.type, event.data["tool_call_id"], event.data["status"]))
        elif event.type in ("turn.started", "turn.completed", "session.waiting"):
            seen.append((event.type, ctx.session.turn.sequence, None))

    store = hs.SQLiteStore(tmp_path / "s.db")
    executor = hs.Executor(store, auth_secret=SECRET)
    bot = agent(loopback, calendar.tools(oauth.strategy()), hooks=[hs.define_hook({"*": on_event})])
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("A standup."))
    chunks = [c async for c in executor.run(bot, "s-1", "What is on monday?", auth="alice")]
    (link,) = sign_in_links(chunks)
    query = await follow(link.url)
    await executor.complete_authorization(query["state"], query["code"])
    assert await executor.run(bot, "s-1", auth="alice").text() == "A standup."
    assert calendar.times == 0 and len(calendar.tokens) == 1
    assert seen == [
        ("turn.started", 1, None),
        ("session.waiting", 1, None),
        ("action.result", CALL, "output"),  # the call re-run with its token
        ("turn.completed", 1, None),
    ]
    await store.close()


async def test_a_turn_with_an_approval_pause_and_a_sign_in_pause_starts_and_completes_once(
    loopback: LoopbackServer, oauth: OAuthServer, tmp_path: Path
) -> None:
    calendar, seen = Calendar(), []

    def on_event(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        if event.type in ("turn.started", "turn.completed", "session.waiting", "action.result"):
            seen.append((event.type, ctx.session.turn.sequence))

    executor = hs.Executor(hs.SQLiteStore(tmp_path / "s.db"), auth_secret=SECRET)
    hook = hs.define_hook({"*": on_event})
    bot = agent(loopback, calendar.tools(oauth.strategy(), needs_approval=True), hooks=[hook])
    loopback.script(tool_calls(("list_events", {"day": "monday"})), text("A standup."))
    await executor.run(bot, "s-1", "Monday?").consume()  # pause 1: the approval
    answer = hs.ApprovalAnswer(approval_id=f"approval-{CALL}", approved=True)
    chunks = [c async for c in executor.run(bot, "s-1", answers=[answer])]
    (link,) = sign_in_links(chunks)  # pause 2: the approved call needs a sign-in
    query = await follow(link.url)
    await executor.complete_authorization(query["state"], query["code"])
    assert await executor.run(bot, "s-1").text() == "A standup."
    assert seen == [
        ("turn.started", 1),
        ("session.waiting", 1),
        ("session.waiting", 1),
        ("action.result", 1),  # the call, re-run after its sign-in
        ("turn.completed", 1),
    ]
