"""The ledger of side-effect calls (issue 36 part 2), in one process, on every store.

A ``side_effects=True`` tool's call is recorded before it runs and after; a call a run left
in flight (here: the run is closed while the tool runs, so the call is cancelled mid-way; the
SIGKILL of a real server is ``tests/server/test_side_effect_ledger.py``) is never run again:
the next turn gives the model ``outcome_unknown`` at once, tells the app (``session.waiting``
with ``wait: "outcome"``, a ``data-outcome-unknown`` part), and ``resolve_call`` settles it
once, its outcome reaching the model as a ``late-answer`` notice at the next model call.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream._tool_context import idempotency_key
from tests.executor._util import snapshot
from tests.loopback import LoopbackServer, text, tool_calls
from tests.store._wrapper import NoFeatures


class Charges:
    """A side-effect tool that records each execution (its call id and idempotency key) and,
    while ``hold`` is set, stays in the call until the run is cut."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str]] = []
        self.hold = False
        self.inside = asyncio.Event()
        self.states: list[str] = []

    def tool(self, store: hs.Store | None = None, *, needs_approval: bool = False) -> hs.Tool:
        async def charge(cents: int, ctx: hs.ToolContext) -> str:
            """Charge the card."""
            self.runs.append((ctx.tool_call_id, ctx.idempotency_key))
            if store is not None and store.call_ledger is not None and ctx.session is not None:
                rows = await store.call_ledger.calls(ctx.session.id)
                self.states += [r.state for r in rows if r.tool_call_id == ctx.tool_call_id]
            if self.hold:
                self.inside.set()
                await asyncio.sleep(3600)
            return f"charged {cents}"

        return hs.tool(side_effects=True, needs_approval=needs_approval)(charge)


def _agent(loopback: LoopbackServer, tool: hs.Tool, **kw: Any) -> hs.Agent:
    settings = {"api_base": loopback.api_base, "api_key": "k"}
    return hs.Agent(name="shop", model="openai/loopback", tools=[tool], settings=settings, **kw)


async def _chunks(run: hs.StreamTextResult[Any]) -> list[Any]:
    return [chunk async for chunk in run]


async def _cut_mid_call(
    executor: hs.Executor, agent: hs.Agent, charges: Charges, session_id: str
) -> None:
    """A turn whose side-effect call is cut while the tool runs (its record is in flight)."""
    charges.hold = True
    run = executor.run(agent, session_id, "pay the invoice")
    iterator = run.__aiter__()
    consumer = asyncio.ensure_future(_drain(iterator))
    await asyncio.wait_for(charges.inside.wait(), 30)
    consumer.cancel()
    await asyncio.gather(consumer, return_exceptions=True)
    await run.aclose()
    charges.hold = False


async def _drain(iterator: Any) -> None:
    async for _ in iterator:
        pass


def _tool_messages(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


async def test_a_side_effect_call_is_recorded_before_it_runs_and_with_its_result_after(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor, charges = hs.Executor(store=store), Charges()
    agent = _agent(loopback, charges.tool(store))
    loopback.script(tool_calls(("charge", {"cents": 5}), call_ids=["call_a"]), text("paid"))
    await _chunks(executor.run(agent, "rec", "pay"))
    assert charges.states == ["running"]  # written before the body ran
    assert store.call_ledger is not None
    (row,) = await store.call_ledger.calls("rec")
    assert (row.tool_call_id, row.tool_name, row.state, row.runs) == ("call_a", "charge", "done", 1)
    assert row.result == {"status": "output", "text": "charged 5"}
    assert json.loads(row.arguments) == {"cents": 5}
    assert row.idempotency_key == idempotency_key("rec", "call_a") == charges.runs[0][1]


async def test_a_tool_without_side_effects_writes_no_ledger_row(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    @hs.tool
    def look(city: str) -> str:
        """Look."""
        return city

    executor = hs.Executor(store=store)
    agent = _agent(loopback, look)
    loopback.script(tool_calls(("look", {"city": "x"})), text("ok"))
    await _chunks(executor.run(agent, "plain", "go"))
    assert store.call_ledger is not None and await store.call_ledger.calls("plain") == []


async def test_the_idempotency_key_is_the_calls_own_and_stable(loopback: LoopbackServer) -> None:
    charges = Charges()
    loopback.script(
        tool_calls(("charge", {"cents": 1}), ("charge", {"cents": 2}), call_ids=["c1", "c2"]),
        text("done"),
        tool_calls(("charge", {"cents": 1}), call_ids=["c1"]),
        text("done"),
    )
    await hs.generate_text(tools=[charges.tool()], prompt="x", **loopback.llm())
    await hs.generate_text(tools=[charges.tool()], prompt="x", **loopback.llm())
    (c1, k1), (c2, k2), (again, k3) = sorted(charges.runs[:2]) + charges.runs[2:]
    assert (c1, c2, again) == ("c1", "c2", "c1")
    assert k1 != k2 and k1 == k3 == idempotency_key(None, "c1")  # outside a session
    assert idempotency_key("s1", "c1") != idempotency_key("s2", "c1") != k1
    assert k1.startswith("hx-") and len(k1) == 43


async def test_a_call_left_in_flight_is_not_run_again_the_model_gets_outcome_unknown(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor, charges = hs.Executor(store=store), Charges()
    waiting: list[dict[str, Any]] = []

    async def on_waiting(event: Any, ctx: Any) -> None:
        waiting.append(dict(event.data))

    hook = hs.define_hook(events={"session.waiting": on_waiting})
    agent = _agent(loopback, charges.tool(), hooks=[hook])
    loopback.script(tool_calls(("charge", {"cents": 500}), call_ids=["call_pay"]))
    await _cut_mid_call(executor, agent, charges, "cut")
    assert store.call_ledger is not None
    assert [r.state for r in await store.call_ledger.calls("cut")] == ["running"]

    loopback.reset()
    loopback.script(text("I could not confirm the payment."))
    chunks = await _chunks(executor.run(agent, "cut", "did it work?"))
    assert len(charges.runs) == 1  # never run again
    body = loopback.bodies()[0]
    result = json.loads(_tool_messages(body)["call_pay"])
    assert result["status"] == "outcome_unknown"
    assert "may or may not have happened" in result["message"]
    assert body["messages"][-1] == {"role": "user", "content": "did it work?"}
    parts = [c for c in chunks if getattr(c, "type", "") == "data-outcome-unknown"]
    assert [p.data["toolCallId"] for p in parts] == ["call_pay"]
    key = idempotency_key("cut", "call_pay")
    assert waiting == [
        {
            "pending": ["call_pay"],
            "wait": "outcome",
            "calls": [{"tool_call_id": "call_pay", "tool_name": "charge", "idempotency_key": key}],
        }
    ]
    assert [r.state for r in await store.call_ledger.calls("cut")] == ["unknown"]
    ui = await executor.ui_messages("cut")
    assert any(p.get("type") == "data-outcome-unknown" for m in ui for p in m["parts"])

    # The app learns what happened: the model reads it at its next call, as a late answer.
    await executor.resolve_call("cut", "call_pay", output={"charged": 500})
    loopback.reset()
    loopback.script(text("It went through."))
    await _chunks(executor.run(agent, "cut", "and now?"))
    late = [m for m in loopback.bodies()[0]["messages"] if "is now known" in str(m.get("content"))]
    assert len(late) == 1 and '{"charged": 500}' in late[0]["content"]
    assert len(charges.runs) == 1
    (row,) = await store.call_ledger.calls("cut")
    assert row.state == "settled" and row.result == {
        "resolved": "output",
        "status": "output",
        "text": '{"charged": 500}',
    }


async def test_rerun_runs_the_call_once_more_with_the_same_key(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor, charges = hs.Executor(store=store), Charges()
    agent = _agent(loopback, charges.tool())
    loopback.script(tool_calls(("charge", {"cents": 7}), call_ids=["call_r"]), text("hm"))
    await _cut_mid_call(executor, agent, charges, "re")
    await _chunks(executor.run(agent, "re", "well?"))
    assert len(charges.runs) == 1
    result = await executor.resolve_call("re", "call_r", rerun=True, agent=agent)
    assert result.status == "output" and result.output == "charged 7"
    assert [c for c, _ in charges.runs] == ["call_r", "call_r"]  # a second time, only now
    assert charges.runs[0][1] == charges.runs[1][1] == idempotency_key("re", "call_r")
    loopback.reset()
    loopback.script(text("Charged."))
    await _chunks(executor.run(agent, "re", "so?"))
    notices = [m["content"] for m in loopback.bodies()[0]["messages"] if m["role"] == "user"]
    assert any("run again" in n and "charged 7" in n for n in notices)


async def _unknown_call(store: hs.Store, loopback: LoopbackServer) -> tuple[hs.Executor, hs.Agent]:
    executor, charges = hs.Executor(store=store), Charges()
    agent = _agent(loopback, charges.tool())
    loopback.script(tool_calls(("charge", {"cents": 1}), call_ids=["call_u"]), text("unsure"))
    await _cut_mid_call(executor, agent, charges, "ref")
    await _chunks(executor.run(agent, "ref", "?"))
    return executor, agent


async def _everything(store: hs.Store) -> tuple[Any, ...]:
    assert store.call_ledger is not None
    return (await snapshot(store, "ref"), await store.call_ledger.calls("ref"))


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"session_id": "nope", "output": "x"}, hs.SessionNotFoundError, id="session"),
        pytest.param({"tool_call_id": "call_x", "output": "x"}, hs.CallNotFoundError, id="call"),
        pytest.param({"output": None, "error": "x"}, hs.InvalidRequestError, id="two-outcomes"),
        pytest.param({"output": float("nan")}, hs.InvalidRequestError, id="not-json"),
        pytest.param({}, hs.InvalidRequestError, id="nothing"),
        pytest.param({"rerun": True}, hs.InvalidRequestError, id="rerun-without-agent"),
        pytest.param({"rerun": True, "agent": "needs-context"}, hs.ToolContextError, id="rerun-no-context"),
        pytest.param({"rerun": True, "agent": "other"}, hs.InvalidRequestError, id="rerun-no-tool"),
    ],
)  # fmt: skip
async def test_a_refused_resolve_writes_nothing(
    store: hs.Store, loopback: LoopbackServer, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    executor, _ = await _unknown_call(store, loopback)
    args = {"session_id": "ref", "tool_call_id": "call_u", **kwargs}
    if args.get("agent") == "needs-context":
        args["agent"] = _agent(loopback, _with_context())
    elif args.get("agent") == "other":
        args["agent"] = hs.Agent(name="other", model="openai/loopback")
    before = await _everything(store)
    with pytest.raises(error):
        await executor.resolve_call(**args)
    assert await _everything(store) == before


class Key(BaseModel):
    api_key: str


def _with_context() -> hs.Tool:
    @hs.tool(context_schema=Key, side_effects=True)
    def charge(cents: int, ctx: hs.ToolContext[Key]) -> str:
        """Charge."""
        return "x"

    return charge


async def test_a_call_is_settled_once(store: hs.Store, loopback: LoopbackServer) -> None:
    executor, agent = await _unknown_call(store, loopback)
    await executor.resolve_call("ref", "call_u", error="the card was declined")
    before = await _everything(store)
    for again in ({"output": "x"}, {"error": "the card was declined"}, {"rerun": True}):
        with pytest.raises(hs.CallAlreadySettledError) as caught:
            await executor.resolve_call("ref", "call_u", agent=agent, **again)
        assert (caught.value.code, caught.value.http_status) == ("call_already_settled", 409)
        assert not caught.value.retryable
    assert await _everything(store) == before


async def test_a_call_with_its_result_is_not_in_flight(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor, charges = hs.Executor(store=store), Charges()
    agent = _agent(loopback, charges.tool())
    loopback.script(tool_calls(("charge", {"cents": 5}), call_ids=["call_done"]), text("paid"))
    await _chunks(executor.run(agent, "fine", "pay"))
    before = (await snapshot(store, "fine"), store.write_transactions)
    with pytest.raises(hs.CallNotInFlightError) as caught:
        await executor.resolve_call("fine", "call_done", output="x")
    assert caught.value.code == "call_not_in_flight"
    assert (await snapshot(store, "fine"), store.write_transactions) == before


async def test_a_store_without_a_ledger_is_refused_for_side_effect_tools_writing_nothing(
    loopback: LoopbackServer,
) -> None:
    inner = hs.MemoryStore()
    executor, charges = hs.Executor(store=NoFeatures(inner)), Charges()
    agent = _agent(loopback, charges.tool())
    with pytest.raises(hs.FrameworkNotSupportedError, match="call_ledger"):
        await executor.run(agent, "none", "pay").text()
    assert await inner.get_session("none") is None and inner.write_transactions == 0
    assert charges.runs == [] and loopback.requests == []


async def test_an_approved_call_left_in_flight_is_not_run_again_by_its_approval(
    store: hs.Store, loopback: LoopbackServer
) -> None:
    executor, charges = hs.Executor(store=store), Charges()
    agent = _agent(loopback, charges.tool(needs_approval=True))
    loopback.script(tool_calls(("charge", {"cents": 9}), call_ids=["call_ok"]))
    await _chunks(executor.run(agent, "ok", "pay"))  # pauses for the approval
    await executor.respond_to_approval("ok", "approval-call_ok", True)
    charges.hold = True
    run = executor.run(agent, "ok")  # the approved call runs, and is cut mid-way
    consumer = asyncio.ensure_future(_drain(run.__aiter__()))
    await asyncio.wait_for(charges.inside.wait(), 30)
    consumer.cancel()
    await asyncio.gather(consumer, return_exceptions=True)
    await run.aclose()
    charges.hold = False
    assert len(charges.runs) == 1

    loopback.reset()
    loopback.script(text("I could not confirm it."))
    await _chunks(executor.run(agent, "ok"))  # the approval still stands: not run again
    assert len(charges.runs) == 1
    (body,) = loopback.bodies()
    assert json.loads(_tool_messages(body)["call_ok"])["status"] == "outcome_unknown"
    assert store.call_ledger is not None
    assert [r.state for r in await store.call_ledger.calls("ok")] == ["unknown"]
    await executor.resolve_call("ok", "call_ok", output="charged 9")
