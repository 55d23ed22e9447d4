"""What the README promises of the executor holds (README, "Durable sessions"): ``retry()``
after an answered turn runs that turn again and the next run is not refused; ``ui_messages``
of a session that does not exist is ``[]``, as ``GET .../messages`` answers, and writes
nothing."""

from __future__ import annotations

import httpx

import helix_stream as hs
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, text

SID = "promises-1"


def agent(loopback: LoopbackServer) -> hs.Agent:
    return hs.Agent(
        name="promises",
        system="System.",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
    )


def said(loopback: LoopbackServer, index: int) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in loopback.bodies()[index]["messages"]]


async def test_retry_after_an_answered_turn_runs_it_again(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    a = agent(loopback)
    loopback.script(text("first answer"), text("second answer"), text("third answer"))
    assert await executor.run(a, SID, "one").text() == "first answer"
    await executor.retry(SID)
    assert await executor.run(a, SID).text() == "second answer"
    # The re-run saw the user message, not the answer it replaces.
    assert said(loopback, 1) == [("system", "System."), ("user", "one")]
    assert [r.role for r in await executor.log(SID) if r.role != "context"] == [
        "user",
        "assistant",
    ]
    # The next run is not refused and follows the new answer.
    assert await executor.run(a, SID, "two").text() == "third answer"
    assert said(loopback, 2)[-3:] == [
        ("user", "one"),
        ("assistant", "second answer"),
        ("user", "two"),
    ]


async def test_retry_twice_in_a_row_runs_the_turn_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    a = agent(loopback)
    loopback.script(text("first"), text("again"))
    await executor.run(a, SID, "one").consume()
    await executor.retry(SID)
    await executor.retry(SID)
    assert await executor.run(a, SID).text() == "again"
    assert len(loopback.requests) == 2


async def test_ui_messages_of_an_unknown_session_is_empty_as_the_route_answers(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    assert await executor.ui_messages("never-seen") == []
    app = create_app(executor, agent(loopback))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        answer = await client.get("/api/chat/never-seen/messages")
    assert (answer.status_code, answer.json()) == (200, [])
    assert await executor.store.get_session("never-seen") is None  # nothing was written
