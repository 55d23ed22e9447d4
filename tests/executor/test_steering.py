"""Steering and queued turns at the executor (docs/guides/serving.md, "Steering").

A message steered while a turn runs is appended as a user message at the turn's next step
boundary, exactly once; a turn that was giving its final answer answers it in a new turn right
after, in the same stream; ``queue`` runs messages as the next turns, in order. Every store.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from tests.executor._util import assert_prefix_stable, snapshot
from tests.loopback import LoopbackServer, text, tool_calls

SID = "steer-1"
STEERED = "Use Paris, Texas instead."


def agent_for(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="steered",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        **kw,
    )


@hs.tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: found"


def steering_at_step(executor: hs.Executor, step: int, message_id: str | None = "m-steer"):
    """A prepare_step that steers the running turn once, at ``step`` (after that step's
    context commit: the model call of ``step`` does not see it yet)."""
    sent: list[hs.Steered] = []

    async def prepare(step_in: Any) -> None:
        if step_in.step_number == step and not sent:
            sent.append(await executor.steer(SID, STEERED, message_id=message_id))

    return prepare, sent


def user_texts(log: list[hs.LogRecord]) -> list[str]:
    return [r.payload["content"] for r in log if r.role == "user"]


async def test_a_steered_message_reaches_the_next_step_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    prepare, sent = steering_at_step(executor, 0)
    agent = agent_for(loopback, tools=[lookup], prepare_step=prepare)
    loopback.script(tool_calls(("lookup", {"city": "Paris"})), text("Paris, Texas it is."))

    chunks = [chunk async for chunk in executor.run(agent, SID, "Weather in Paris?")]

    assert sent == [hs.Steered(recorded=True, running=True)]
    bodies = loopback.bodies()
    assert len(bodies) == 2
    # The first call did not have it; the second ends with it, as the user's message.
    assert all(m.get("content") != STEERED for m in bodies[0]["messages"])
    assert bodies[1]["messages"][-1] == {"role": "user", "content": STEERED}
    assert_prefix_stable(loopback.requests)  # appended like any message: earlier bytes kept
    steering = [chunk for chunk in chunks if isinstance(chunk, c.SteeringMessage)]
    assert steering == [c.SteeringMessage(id="m-steer", parts=[{"type": "text", "text": STEERED}])]
    log = await executor.store.read_log(SID)
    assert [r.role for r in log if r.role != "context"] == [
        "user", "assistant", "tool", "user", "assistant"
    ]  # fmt: skip
    assert user_texts(log) == ["Weather in Paris?", STEERED]
    session = await executor.session(SID)
    assert session.status == "idle"
    assert not any(entry for entry in (await executor.store.read_snapshot(SID)).pending)
    # One turn, one finish: the steered message did not start another.
    assert sum(isinstance(chunk, c.Finish) for chunk in chunks) == 1


async def test_a_finishing_turn_answers_it_in_a_new_turn_right_after(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    prepare, sent = steering_at_step(executor, 0)
    agent = agent_for(loopback, prepare_step=prepare)
    loopback.script(text("Paris, France: sunny."), text("Paris, Texas: hot."))

    result = executor.run(agent, SID, "Weather in Paris?", message_id="a-1")
    chunks = [chunk async for chunk in result]

    assert sent == [hs.Steered(recorded=True, running=True)]
    bodies = loopback.bodies()
    assert len(bodies) == 2
    assert bodies[1]["messages"][-2:] == [
        {"role": "assistant", "content": "Paris, France: sunny."},
        {"role": "user", "content": STEERED},
    ]
    assert_prefix_stable(loopback.requests)
    # One stream, one UI message: one start, one finish, the steering part between answers.
    kinds = [type(chunk).__name__ for chunk in chunks]
    assert kinds.count("Start") == 1 and kinds.count("Finish") == 1
    assert kinds.index("SteeringMessage") > kinds.index("TextEnd")
    assert await result.text() == "Paris, Texas: hot."
    log = await executor.store.read_log(SID)
    assert user_texts(log) == ["Weather in Paris?", STEERED]
    answers = [r.payload.get("_message_id") for r in log if r.role == "assistant"]
    assert answers == ["a-1", "a-1"]  # the follow-up continues the same UI message
    session = await executor.session(SID)
    assert session.status == "idle"
    assert "_steered" not in session.meta  # the flag is cleared once nothing waits
    # The next turn is an ordinary one: nothing steered runs again.
    loopback.script(text("Anything else?"))
    await executor.run(agent_for(loopback), SID, "Thanks").consume()
    assert user_texts(await executor.store.read_log(SID)) == [
        "Weather in Paris?", STEERED, "Thanks"
    ]  # fmt: skip


async def test_the_same_message_id_is_stored_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[hs.Steered] = []

    async def prepare(step_in: Any) -> None:
        if step_in.step_number == 0:
            for _ in range(2):  # a client's retry of one send
                seen.append(await executor.steer(SID, STEERED, message_id="m-twice"))

    agent = agent_for(loopback, tools=[lookup], prepare_step=prepare)
    loopback.script(tool_calls(("lookup", {"city": "Paris"})), text("ok"))
    await executor.run(agent, SID, "Weather?").consume()

    assert [s.recorded for s in seen] == [True, False]
    assert user_texts(await executor.store.read_log(SID)) == ["Weather?", STEERED]
    assert [m.get("content") for m in loopback.bodies()[1]["messages"]].count(STEERED) == 1


async def test_steering_an_idle_session_waits_for_its_next_run(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(text("hello"))
    await executor.run(agent_for(loopback), SID, "hi").consume()

    steered = await executor.steer(SID, STEERED, message_id="m-idle")

    assert steered == hs.Steered(recorded=True, running=False)
    loopback.script(text("Texas then."))
    result = executor.run(agent_for(loopback), SID)  # no input: it answers the message
    chunks = [chunk async for chunk in result]
    assert any(isinstance(chunk, c.SteeringMessage) for chunk in chunks)
    assert loopback.bodies()[-1]["messages"][-1] == {"role": "user", "content": STEERED}
    assert await result.text() == "Texas then."


async def test_steering_refusals_write_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(text("hello"))
    await executor.run(agent_for(loopback), SID, "hi").consume()
    before = await snapshot(executor.store, SID)

    with pytest.raises(hs.InvalidRequestError):
        await executor.steer(SID, {"role": "assistant", "content": "no"})
    with pytest.raises(hs.InvalidRequestError):
        await executor.steer(SID, "\ud800")  # a lone surrogate
    with pytest.raises(hs.SessionNotFoundError):
        await executor.steer("no-such-session", STEERED)

    assert await snapshot(executor.store, SID) == before
    assert await executor.store.get_session("no-such-session") is None


async def test_a_rewind_past_a_steered_message_does_not_send_it_again(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    prepare, _ = steering_at_step(executor, 0)
    agent = agent_for(loopback, tools=[lookup], prepare_step=prepare)
    loopback.script(tool_calls(("lookup", {"city": "Paris"})), text("ok"))
    await executor.run(agent, SID, "Weather?").consume()

    await executor.store.rewind(SID, 1)  # back to the first user message

    assert (await executor.store.read_snapshot(SID)).pending == []
    loopback.script(text("again"))
    await executor.run(agent_for(loopback), SID, "Other question").consume()
    assert STEERED not in user_texts(await executor.store.read_log(SID))


async def test_queued_messages_run_as_the_next_turns_in_order(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    release = asyncio.Event()
    started = asyncio.Event()

    @hs.tool
    async def slow(city: str) -> str:
        """Takes a while."""
        started.set()
        await release.wait()
        return "done"

    agent = agent_for(loopback, tools=[slow])
    loopback.script(tool_calls(("slow", {"city": "Paris"})), text("first answer"))
    first = asyncio.create_task(executor.run(agent, SID, "first").consume())
    await asyncio.wait_for(started.wait(), 30)

    async def queued(message: str) -> str:
        result = await executor.queue(SID, message, agent=agent_for(loopback))
        return await result.text()

    loopback.script(text("second answer"), text("third answer"))
    second = asyncio.create_task(queued("second"))
    await asyncio.sleep(0.05)  # the second is queued before the third
    third = asyncio.create_task(queued("third"))
    await asyncio.sleep(0.3)
    assert not second.done() and not third.done()  # they wait for the running turn

    release.set()
    await first
    assert await asyncio.wait_for(second, 30) == "second answer"
    assert await asyncio.wait_for(third, 30) == "third answer"
    assert user_texts(await executor.store.read_log(SID)) == ["first", "second", "third"]


async def test_a_queued_message_refused_writes_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(text("hello"))
    await executor.run(agent_for(loopback), SID, "hi").consume()
    before = await snapshot(executor.store, SID)

    with pytest.raises(hs.InvalidRequestError):
        await executor.queue(SID, {"role": "tool", "content": "x"}, agent=agent_for(loopback))
    await executor.store.set_status(SID, "running")  # a turn that never ends
    with pytest.raises(hs.SessionBusyError):
        await executor.queue(SID, "later", agent=agent_for(loopback), max_wait=0.3)
    await executor.store.set_status(SID, "idle")

    after = await snapshot(executor.store, SID)
    assert after[:-1] == before[:-1]  # the log, queue and checkpoints (two status writes)


async def test_a_reload_shows_the_steered_message_where_it_was_delivered(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    prepare, _ = steering_at_step(executor, 0)
    agent = agent_for(loopback, tools=[lookup], prepare_step=prepare)
    loopback.script(tool_calls(("lookup", {"city": "Paris"})), text("Paris, Texas it is."))
    await executor.run(agent, SID, "Weather in Paris?", message_id="a-1").consume()

    v7 = await executor.ui_messages(SID, client_version=7)
    assert [(m["id"], m["role"]) for m in v7] == [("log-1", "user"), ("a-1", "assistant")]
    kinds = [p["type"] for p in v7[1]["parts"]]
    steering = {"type": "steering-message", "id": "m-steer", "parts": [
        {"type": "text", "text": STEERED}
    ]}  # fmt: skip
    assert steering in v7[1]["parts"]
    # In place: after the tool's step, before the answer that took it in.
    assert kinds.index("steering-message") > kinds.index("tool-lookup")
    assert kinds.index("steering-message") < kinds.index("text")

    for version in (5, 6):
        old = await executor.ui_messages(SID, client_version=version)
        assert [(m["id"], m["role"]) for m in old] == [
            ("log-1", "user"), ("a-1", "assistant"), ("m-steer", "user"), ("a-1-5", "assistant")
        ]  # fmt: skip
        assert not any(p["type"] == "steering-message" for m in old for p in m["parts"])
        assert old[2]["parts"] == [{"type": "text", "text": STEERED}]
        assert old[3]["parts"][-1] == {
            "type": "text",
            "text": "Paris, Texas it is.",
            "state": "done",
        }


async def test_a_steered_message_sent_again_as_a_turn_is_stored_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(text("hello"))
    await executor.run(agent_for(loopback), SID, "hi").consume()
    assert not (await executor.steer(SID, STEERED, message_id="m-again")).running

    # The client, told no turn ran, sends the same message (its id) as a turn of its own.
    again = {"role": "user", "content": STEERED, "_message_id": "m-again"}
    loopback.script(text("Texas."))
    await executor.run(agent_for(loopback), SID, again).consume()

    assert user_texts(await executor.store.read_log(SID)) == ["hi", STEERED]
    assert [m.get("content") for m in loopback.bodies()[-1]["messages"]].count(STEERED) == 1


async def test_the_message_that_started_the_turn_is_not_steered_to_it_again(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[hs.Steered] = []

    async def prepare(step_in: Any) -> None:
        if step_in.step_number == 0:  # the client retries the send that started this turn
            seen.append(await executor.steer(SID, "Weather?", message_id="u-first"))

    agent = agent_for(loopback, tools=[lookup], prepare_step=prepare)
    loopback.script(tool_calls(("lookup", {"city": "Paris"})), text("ok"))
    first = {"role": "user", "content": "Weather?", "_message_id": "u-first"}
    await executor.run(agent, SID, first).consume()

    assert seen == [hs.Steered(recorded=False, running=True)]
    assert user_texts(await executor.store.read_log(SID)) == ["Weather?"]
