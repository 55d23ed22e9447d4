"""Hostile input at the HTTP edge, on every store: a 400 with a short message, one short log
line, and nothing written.

Deeply nested JSON, NUL and control characters in ids and keys, lone surrogates in text, ids
too long to echo, ids with ``/`` (sub-agent sessions) that must read back, and more context
items than one call or one session's queue may hold.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import helix_stream as hs
from helix_stream._limits import MAX_ITEMS_PER_CALL, MAX_JSON_DEPTH, MAX_SESSION_ID_LENGTH
from helix_stream.server import create_app
from tests._store import create_session, pending_context
from tests.executor._util import snapshot
from tests.server.conftest import chat, client, user
from tests.store import _pg

SID = "s1"
QUEUE_CAP = 150


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[hs.Store]:
    made: hs.Store
    if request.param == "memory":
        made = hs.MemoryStore(max_queued_items=QUEUE_CAP)
    elif request.param == "sqlite":
        made = hs.SQLiteStore(tmp_path / "helix.db", max_queued_items=QUEUE_CAP)
    else:
        made = _pg.make_store(max_queued_items=QUEUE_CAP)
    try:
        yield made
    finally:
        await made.close()
        _pg.drop_schemas()


@pytest.fixture
async def http(store: hs.Store, agent: hs.Agent) -> AsyncIterator[httpx.AsyncClient]:
    executor = hs.Executor(store=store)
    await create_session(store, SID, agent_name=agent.name)
    async with client(create_app(executor, agent)) as made:
        yield made


async def written(store: hs.Store, *ids: str) -> tuple[Any, ...]:
    return tuple([await snapshot(store, sid) for sid in ids])


def error(response: httpx.Response) -> tuple[int, str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    return response.status_code, body["error"]["code"], body["error"]["message"]


async def post(http: httpx.AsyncClient, path: str, body: Any) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await http.post(path, content=raw, headers={"content-type": "application/json"})


# -- JSON nested 100,000 levels deep (item 8) ------------------------------------------------

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/chat", b'{"id": "fresh", "messages": ' + DEEP + b"}"),
        ("/context", b'{"sessionId": "s1", "items": ' + DEEP + b"}"),
    ],
    ids=["chat", "context"],
)
async def test_json_nested_100000_deep_is_a_400_with_one_short_log_line(
    http: httpx.AsyncClient,
    store: hs.Store,
    caplog: pytest.LogCaptureFixture,
    path: str,
    body: bytes,
) -> None:
    before = await written(store, SID, "fresh")
    with caplog.at_level(logging.INFO, logger="helix_stream"):
        response = await post(http, path, body)
    status, code, message = error(response)
    assert (status, code) == (400, "invalid_request")
    assert f"more than {MAX_JSON_DEPTH} levels deep" in message
    records = [r for r in caplog.records if r.name.startswith("helix_stream")]
    assert len(records) == 1, [r.getMessage() for r in records]
    assert records[0].exc_info is None and "\n" not in records[0].getMessage()
    assert len(records[0].getMessage()) < 400
    assert await written(store, SID, "fresh") == before


def nested(levels: int) -> Any:
    value: Any = "deep"
    for _ in range(levels):
        value = [value]
    return value


async def test_the_depth_limit_counts_every_level_of_the_body(
    http: httpx.AsyncClient, store: hs.Store
) -> None:
    # body, messages, message, parts, part: five levels before the part's own field.
    def body(extra_levels: int) -> dict[str, Any]:
        part = {"type": "text", "text": "Hi", "extra": nested(extra_levels)}
        return chat("deep", {"id": "u1", "role": "user", "parts": [part]})

    refused = await post(http, "/api/chat", body(MAX_JSON_DEPTH - 4))
    assert error(refused)[:2] == (400, "invalid_request")
    assert await store.get_session("deep") is None
    accepted = await post(http, "/api/chat", body(MAX_JSON_DEPTH - 5))
    assert accepted.status_code == 200
    assert (await store.get_session("deep")) is not None


# -- NUL and control characters in ids and keys (items 8, 10) --------------------------------

BAD_IDS = {"nul": "a\x00b", "newline": "a\nb", "del": "a\x7fb", "c1": "a\x85b", "empty": ""}


@pytest.mark.parametrize("bad", list(BAD_IDS))
@pytest.mark.parametrize(
    "where", ["chat-id", "context-session", "context-key", "get-messages", "get-stream"]
)
async def test_a_bad_id_or_key_is_a_400_and_nothing_is_written(
    http: httpx.AsyncClient, store: hs.Store, bad: str, where: str
) -> None:
    value = BAD_IDS[bad]
    before = await written(store, SID)
    if where == "chat-id":
        response = await post(http, "/api/chat", chat(value, user("Hi")))
    elif where == "context-session":
        response = await post(http, "/context", {"sessionId": value, "items": [hs.notice("x")]})
    elif where == "context-key":
        body = {"sessionId": SID, "items": [hs.notice("x")], "key": value}
        response = await post(http, "/context", body)
    else:
        suffix = "messages" if where == "get-messages" else "stream"
        response = await http.get(f"/api/chat/{quote(value, safe='')}/{suffix}")
    if where.startswith("get") and bad == "newline":
        # No route matches a path with a newline in it (Starlette's routes match up to one).
        assert error(response)[:2] == (404, "not_found")
    elif where.startswith("get") and bad == "empty":
        # "/api/chat//messages" names no session id: refused the same way.
        assert error(response)[:2] == (400, "invalid_request")
    else:
        status, code, message = error(response)
        assert (status, code) == (400, "invalid_request"), message
        assert ("key" if where == "context-key" else "session id") in message
    assert await written(store, SID) == before


# -- lone surrogates in text (item 9) ----------------------------------------------------------


SURROGATE_BODIES = {
    "user-text-escaped": ("/api/chat", json.dumps(chat("fresh", user("Hi \ud800"))).encode()),
    "user-text-raw-bytes": (
        "/api/chat",
        json.dumps(chat("fresh", user("Hi X")), ensure_ascii=False)
        .encode()
        .replace(b"X", b"\xed\xa0\x80"),
    ),
    "history-text": (
        "/api/chat",
        json.dumps(
            chat(
                "fresh",
                {"id": "m0", "role": "assistant", "parts": [{"type": "text", "text": "\udfff"}]},
                user("Hi"),
            )
        ).encode(),
    ),
    "message-id": ("/api/chat", json.dumps(chat("fresh", user("Hi", id="u\udc00"))).encode()),
    "context-item": (
        "/context",
        json.dumps({"sessionId": SID, "items": [hs.notice("a \ud83d b")]}).encode(),
    ),
    "object-key": ("/context", b'{"sessionId": "s1", "items": [{"\\ud800": 1}]}'),
}


@pytest.mark.parametrize("case", list(SURROGATE_BODIES))
async def test_a_lone_surrogate_is_a_400_before_anything_is_written(
    http: httpx.AsyncClient, store: hs.Store, case: str
) -> None:
    path, body = SURROGATE_BODIES[case]
    before = await written(store, SID, "fresh")
    status, code, message = error(await post(http, path, body))
    assert (status, code) == (400, "invalid_request")
    assert "lone surrogate" in message
    assert await written(store, SID, "fresh") == before
    assert await store.get_session("fresh") is None


async def test_a_proper_surrogate_pair_and_nul_in_text_are_fine(
    http: httpx.AsyncClient, store: hs.Store
) -> None:
    response = await post(http, "/api/chat", chat("fresh", user("Hi \U0001f642 a\x00b")))
    assert response.status_code == 200
    log = await store.read_log("fresh")
    assert log[0].payload["content"] == "Hi \U0001f642 a\x00b"


# -- session ids: "/" round-trips, long ids are refused and never echoed (item 10) ----------


@pytest.mark.parametrize(
    "sid",
    ["parent/call_1", "a/b/c", "x/messages", "x/stream", "é 🙂"],
    ids=["slash", "nested", "ends-like-a-route", "ends-like-stream", "unicode"],
)
async def test_every_id_that_can_be_created_reads_back_on_the_get_routes(
    http: httpx.AsyncClient, sid: str
) -> None:
    created = await post(http, "/api/chat", chat(sid, user("Hi")))
    assert created.status_code == 200
    for path in (f"/api/chat/{sid}/messages", "/api/chat/" + sid.replace("/", "%2F") + "/messages"):
        response = await http.get(path)
        assert response.status_code == 200, (path, response.text)
        assert [m["role"] for m in response.json()] == ["user", "assistant"]
    assert (await http.get(f"/api/chat/{sid}/stream")).status_code == 204


async def test_the_longest_id_is_accepted_and_one_more_character_is_refused(
    http: httpx.AsyncClient, store: hs.Store
) -> None:
    longest = "i" * MAX_SESSION_ID_LENGTH
    assert (await post(http, "/api/chat", chat(longest, user("Hi")))).status_code == 200
    assert (await http.get(f"/api/chat/{longest}/messages")).status_code == 200
    too_long = longest + "i"
    status, code, message = error(await post(http, "/api/chat", chat(too_long, user("Hi"))))
    assert (status, code) == (400, "invalid_request")
    assert f"longer than {MAX_SESSION_ID_LENGTH} characters" in message
    assert await store.get_session(too_long[:-1]) is not None  # only the valid one exists


@pytest.mark.parametrize("where", ["context", "get-messages", "get-stream"])
async def test_a_huge_id_is_refused_without_being_echoed(
    http: httpx.AsyncClient, store: hs.Store, where: str
) -> None:
    # As long as each route lets it be: a body of under 1 MB, a URL of under 64 KiB (httpx).
    huge = "h" * (400_000 if where == "context" else 60_000)
    before = await written(store, SID)
    if where == "context":
        response = await post(http, "/context", {"sessionId": huge, "items": [hs.notice("x")]})
    else:
        response = await http.get(f"/api/chat/{huge}/{where.removeprefix('get-')}")
    status, code, message = error(response)
    assert (status, code) == (400, "invalid_request")
    assert f"({len(huge)} characters)" in message
    assert len(response.content) < 500
    assert await written(store, SID) == before


# -- how many items one call and one queue may hold (item 11) -----------------------------


async def test_one_post_context_adds_at_most_the_per_call_cap(
    http: httpx.AsyncClient, store: hs.Store
) -> None:
    before = await written(store, SID)
    over = {"sessionId": SID, "items": [hs.notice(f"n{i}") for i in range(MAX_ITEMS_PER_CALL + 1)]}
    status, code, message = error(await post(http, "/context", over))
    assert (status, code) == (400, "validation_error")
    assert (
        f"{MAX_ITEMS_PER_CALL + 1} items in one call; the limit is {MAX_ITEMS_PER_CALL}" in message
    )
    assert await written(store, SID) == before
    at_cap = {"sessionId": SID, "items": over["items"][:MAX_ITEMS_PER_CALL]}
    assert (await post(http, "/context", at_cap)).json() == {"recorded": MAX_ITEMS_PER_CALL}


async def test_the_session_queue_cap_refuses_whole_and_a_turn_makes_room(
    http: httpx.AsyncClient, store: hs.Store
) -> None:
    def body(start: int, count: int) -> dict[str, Any]:
        return {"sessionId": SID, "items": [hs.notice(f"n{start + i}") for i in range(count)]}

    assert (await post(http, "/context", body(0, 100))).json() == {"recorded": 100}
    before = await written(store, SID)
    status, code, message = error(await post(http, "/context", body(100, 51)))
    assert (status, code) == (400, "validation_error")
    assert "already has 100 context items waiting" in message and f"limit of {QUEUE_CAP}" in message
    assert await written(store, SID) == before
    assert (await post(http, "/context", body(100, 50))).json() == {"recorded": 50}
    # A turn's context pass delivers the queue: there is room again.
    assert (await post(http, "/api/chat", chat(SID, user("Hi")))).status_code == 200
    assert await pending_context(store, SID) == []
    assert (await post(http, "/context", body(150, 100))).json() == {"recorded": 100}
