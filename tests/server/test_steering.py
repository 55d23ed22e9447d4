"""The chat route's ``turn_policy``: a user message posted while a turn runs is steered to it
(202; the running stream carries it), queued as the next turn, or refused (409).

Real HTTP to the loopback model through litellm; the running turn is held inside a tool until
the test lets it go. Two replicas share one PostgreSQL store in the last test.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import helix_stream as hs
from helix_stream.server import create_app
from tests.executor._util import assert_prefix_stable, snapshot
from tests.loopback import LoopbackServer, text, tool_calls
from tests.server._asgi import LiveRequest
from tests.server.conftest import chat, user
from tests.store import _pg

STEERED = "Use Paris, Texas instead."


class Gate:
    """A tool that holds the running turn until the test opens the gate."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()

        @hs.tool
        async def hold(city: str) -> str:
            """Look the city up (slowly)."""
            self.entered.set()
            await asyncio.wait_for(self.open.wait(), 30)
            return f"{city}: found"

        self.tool = hold


def agent_for(loopback: LoopbackServer, gate: Gate, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="steered",
        model="openai/loopback",
        tools=[gate.tool],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        **kw,
    )


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


@pytest.fixture
async def executor() -> AsyncIterator[hs.Executor]:
    executor = hs.Executor(store=hs.MemoryStore())
    yield executor
    await executor.store.close()


async def running_turn(app: Any, gate: Gate, session_id: str = "s") -> LiveRequest:
    """The first message's turn, streaming, held in its tool."""
    first = LiveRequest(app, "POST", "/api/chat", chat(session_id, user("Weather in Paris?")))
    await first.__aenter__()
    assert first.status == 200
    await asyncio.wait_for(gate.entered.wait(), 30)
    return first


def parts_of(chunks: list[Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in chunks if isinstance(c, dict) and c.get("type") == kind]


async def test_a_message_sent_while_a_turn_runs_steers_it(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    gate = Gate()
    app = create_app(executor, agent_for(loopback, gate))  # the default policy: steer
    loopback.script(tool_calls(("hold", {"city": "Paris"})), text("Texas: hot."))
    first = await running_turn(app, gate)

    async with client_for(app) as client:
        body = chat("s", user("Weather in Paris?"), user(STEERED, "u2"))
        sent = await client.post("/api/chat", json=body)
        again = await client.post("/api/chat", json=body)  # a retry of the same send
    assert (sent.status_code, sent.json()) == (
        202,
        {"steered": True, "recorded": True, "messageId": "u2"},
    )
    assert (again.status_code, again.json()["recorded"]) == (202, False)

    gate.open.set()
    chunks = await first.read_all()
    await first.disconnect()
    assert parts_of(chunks, "steering-message") == [
        {"type": "steering-message", "id": "u2", "parts": [{"type": "text", "text": STEERED}]}
    ]
    bodies = loopback.bodies()
    assert bodies[1]["messages"][-1] == {"role": "user", "content": STEERED}
    assert_prefix_stable(loopback.requests)
    async with client_for(app) as client:
        messages = (await client.get("/api/chat/s/messages")).json()
    assert [m["role"] for m in messages] == ["user", "assistant"]  # ai@7: in place
    steering = parts_of(messages[1]["parts"], "steering-message")
    assert [p["id"] for p in steering] == ["u2"]


async def test_older_clients_get_no_steering_part_and_see_it_in_the_messages(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    gate = Gate()
    app = create_app(executor, agent_for(loopback, gate), client_version=6)
    loopback.script(tool_calls(("hold", {"city": "Paris"})), text("Texas: hot."))
    first = await running_turn(app, gate)
    async with client_for(app) as client:
        body = chat("s", user("Weather in Paris?"), user(STEERED, "u2"))
        assert (await client.post("/api/chat", json=body)).status_code == 202
        gate.open.set()
        chunks = await first.read_all()
        await first.disconnect()
        messages = (await client.get("/api/chat/s/messages")).json()
    assert not parts_of(chunks, "steering-message")
    assert [(m["role"], m["id"]) for m in messages][2] == ("user", "u2")
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert len({m["id"] for m in messages}) == 4


async def test_queued_messages_run_as_the_next_turns_in_order(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    gate = Gate()
    app = create_app(executor, agent_for(loopback, gate), turn_policy="queue")
    loopback.script(tool_calls(("hold", {"city": "Paris"})), text("first"))
    first = await running_turn(app, gate)
    loopback.script(text("second"), text("third"))

    async def post(text_: str, message_id: str) -> list[Any]:
        async with LiveRequest(app, "POST", "/api/chat", chat("s", user(text_, message_id))) as r:
            assert r.status == 200
            return await r.read_all()

    second = asyncio.create_task(post("and Lyon?", "u2"))
    await asyncio.sleep(0.05)
    third = asyncio.create_task(post("and Nice?", "u3"))
    await asyncio.sleep(0.3)
    assert not second.done() and not third.done()  # held until the running turn ends
    gate.open.set()
    await first.read_all()
    await first.disconnect()
    texts = []
    for task in (second, third):
        chunks = await asyncio.wait_for(task, 30)
        texts.append("".join(c["delta"] for c in parts_of(chunks, "text-delta")))
    assert texts == ["second", "third"]
    log = await executor.store.read_log("s")
    users = [r.payload["content"] for r in log if r.role == "user"]
    assert users == ["Weather in Paris?", "and Lyon?", "and Nice?"]


async def test_reject_refuses_with_409_and_writes_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    gate = Gate()
    agent = agent_for(loopback, gate, turn_policy="reject")  # the agent's policy
    app = create_app(executor, agent)
    loopback.script(tool_calls(("hold", {"city": "Paris"})), text("done"))
    first = await running_turn(app, gate)
    before = await snapshot(executor.store, "s")
    async with client_for(app) as client:
        refused = await client.post("/api/chat", json=chat("s", user(STEERED, "u2")))
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "state_session_busy")
    assert await snapshot(executor.store, "s") == before
    gate.open.set()
    await first.read_all()
    await first.disconnect()


def test_a_turn_policy_that_is_not_one_is_refused_at_startup(executor: hs.Executor) -> None:
    agent = hs.Agent(name="a", model="helix/demo")
    with pytest.raises(ValueError, match="turn_policy"):
        create_app(executor, agent, turn_policy="later")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match="turn_policy"):
        hs.Agent(name="a", model="helix/demo", turn_policy="later")  # type: ignore[arg-type]


async def test_a_message_posted_to_another_replica_reaches_the_turn_once(
    loopback: LoopbackServer,
) -> None:
    schema = _pg.new_schema()  # skips, with the reason, when no PostgreSQL answers
    stores = [_pg.make_store(schema), _pg.make_store(schema)]
    try:
        gate = Gate()
        replicas = [create_app(hs.Executor(store=s), agent_for(loopback, gate)) for s in stores]
        loopback.script(tool_calls(("hold", {"city": "Paris"})), text("Texas: hot."))
        first = await running_turn(replicas[0], gate, "pg")
        body = chat("pg", user(STEERED, "u2"))
        async with client_for(replicas[1]) as other, client_for(replicas[0]) as same:
            answers = [await other.post("/api/chat", json=body)]
            answers.append(await same.post("/api/chat", json=body))  # the same send, again
        assert [(a.status_code, a.json()["recorded"]) for a in answers] == [
            (202, True), (202, False)
        ]  # fmt: skip
        gate.open.set()
        chunks = await first.read_all()
        await first.disconnect()
        assert [p["id"] for p in parts_of(chunks, "steering-message")] == ["u2"]
        log = await stores[1].read_log("pg")
        assert [r.payload["content"] for r in log if r.role == "user"] == [
            "Weather in Paris?", STEERED
        ]  # fmt: skip
        contents = [json.dumps(m) for m in loopback.bodies()[1]["messages"]]
        assert sum(STEERED in m for m in contents) == 1
    finally:
        for s in stores:
            await s.close()
        _pg.drop_schemas()
