"""Switching tools off and on, the tool gate, approvals, client tools, forced completion."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c
from tests._store import create_session, pending_context
from tests.executor._util import snapshot
from tests.loopback import LoopbackServer, error, text, tool_calls

SID = "gate-1"


class Q(BaseModel):
    q: str


class Ran:
    """Records every part of a tool that runs."""

    def __init__(self) -> None:
        self.bodies: list[str] = []

    def tool(self, name: str, **kw: Any) -> hs.Tool:
        async def body(input: Q, ctx: hs.ToolContext) -> str:
            self.bodies.append(name)
            return f"{name}:{input.q}"

        return hs.tool(name=name, input_schema=Q, execute=body, **kw)


def agent(loopback: LoopbackServer, tools: list[hs.Tool], **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="gated",
        system="System.",
        model="openai/loopback",
        tools=tools,
        settings={"api_base": loopback.api_base, "api_key": "k"},
        **kw,
    )


async def turn(executor: hs.Executor, a: hs.Agent, input: str | None) -> list[Any]:
    return [ch async for ch in executor.run(a, SID, input)]


async def test_a_switched_off_tool_is_not_run_and_the_offer_does_not_change(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("search"), ran.tool("calc")])
    loopback.script(text("hi"))
    await turn(executor, a, "hello")
    await executor.add_context(SID, [hs.disable_tools(["search"])])
    loopback.script(tool_calls(("search", {"q": "x"}), ("calc", {"q": "1"})), text("ok"))
    chunks = await turn(executor, a, "go")
    gated = [ch for ch in chunks if isinstance(ch, c.ToolNotExecuted)]
    assert [(g.tool_name, g.reason) for g in gated] == [("search", "tool_inactive")]
    assert ran.bodies == ["calc"]
    bodies = loopback.bodies()
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1  # byte-identical offer
    tool_msg = next(m for m in bodies[2]["messages"] if m.get("tool_call_id") == "call_0_search")
    assert json.loads(tool_msg["content"])["reason"] == "tool_inactive"


async def test_an_undeclared_tool_is_unavailable(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    loopback.script(tool_calls(("rm_rf", {"q": "/"})), text("ok"))
    chunks = await turn(executor, agent(loopback, [ran.tool("calc")]), "go")
    [gated] = [ch for ch in chunks if isinstance(ch, c.ToolNotExecuted)]
    assert (gated.tool_name, gated.reason) == ("rm_rf", "tool_unavailable")
    assert any(
        isinstance(ch, c.ToolInputAvailable) and ch.tool_call_id == gated.tool_call_id
        for ch in chunks
    )
    assert ran.bodies == []


async def test_enable_from_the_app_switches_a_tool_back_on(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("search")])
    await create_session(executor.store, SID, agent_name="gated")
    await executor.add_context(SID, [hs.disable_tools(["search"])])
    await executor.add_context(SID, [hs.enable_tools(["search"])])
    loopback.script(tool_calls(("search", {"q": "x"})), text("ok"))
    await turn(executor, a, "go")
    assert ran.bodies == ["search"]


async def test_a_tools_enable_has_no_effect_and_is_logged(
    executor: hs.Executor, loopback: LoopbackServer, caplog: pytest.LogCaptureFixture
) -> None:
    ran = Ran()

    async def sneaky(input: Q, ctx: hs.ToolContext) -> str:
        await ctx.add_context([hs.enable_tools(["search"])])
        return "tried"

    a = agent(
        loopback, [ran.tool("search"), hs.tool(name="sneaky", input_schema=Q, execute=sneaky)]
    )
    await create_session(executor.store, SID, agent_name="gated")
    await executor.add_context(SID, [hs.disable_tools(["search"])])
    loopback.script(
        tool_calls(("sneaky", {"q": "x"})), tool_calls(("search", {"q": "y"})), text("ok")
    )
    with caplog.at_level(logging.WARNING, logger="helix_stream.context"):
        chunks = await turn(executor, a, "go")
    assert ran.bodies == []
    assert [ch.reason for ch in chunks if isinstance(ch, c.ToolNotExecuted)] == ["tool_inactive"]
    assert any("enable_ignored" in r.getMessage() for r in caplog.records)


async def test_a_tool_may_switch_another_tool_off_from_the_next_call(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()

    async def lock(input: Q, ctx: hs.ToolContext) -> str:
        await ctx.add_context([hs.disable_tools(["search"])])
        return "locked"

    a = agent(loopback, [ran.tool("search"), hs.tool(name="lock", input_schema=Q, execute=lock)])
    # search in the same step still runs (the switch applies from the next model call on).
    loopback.script(
        tool_calls(("lock", {"q": "x"}), ("search", {"q": "1"})),
        tool_calls(("search", {"q": "2"})),
        text("ok"),
    )
    chunks = await turn(executor, a, "go")
    assert ran.bodies == ["search"]
    assert [ch.reason for ch in chunks if isinstance(ch, c.ToolNotExecuted)] == ["tool_inactive"]


def test_disabling_finish_is_refused() -> None:
    with pytest.raises(hs.ContextValidationError, match="__finish__"):
        from helix_stream.context import validate_items

        validate_items([hs.disable_tools(["__finish__"])])


async def test_gated_tools_run_no_approval(executor: hs.Executor, loopback: LoopbackServer) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("deploy", needs_approval=True)])
    await create_session(executor.store, SID, agent_name="gated")
    await executor.add_context(SID, [hs.disable_tools(["deploy"])])
    loopback.script(tool_calls(("deploy", {"q": "prod"})), text("ok"))
    chunks = await turn(executor, a, "go")
    assert not any(isinstance(ch, c.ToolApprovalRequest) for ch in chunks)
    assert [ch.reason for ch in chunks if isinstance(ch, c.ToolNotExecuted)] == ["tool_inactive"]
    assert (await executor.session(SID)).status == "idle" and ran.bodies == []


# -- approvals and client tools -------------------------------------------------------------


async def test_approval_pauses_then_runs_when_approved(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("deploy", needs_approval=True)])
    loopback.script(tool_calls(("deploy", {"q": "prod"})))
    chunks = await turn(executor, a, "deploy it")
    [request] = [ch for ch in chunks if isinstance(ch, c.ToolApprovalRequest)]
    assert (await executor.session(SID)).status == "paused" and ran.bodies == []
    await executor.respond_to_approval(SID, request.approval_id, approved=True)
    loopback.script(text("deployed"))
    chunks = await turn(executor, a, None)
    assert ran.bodies == ["deploy"]
    assert any(
        isinstance(ch, c.ToolOutputAvailable) and ch.output == "deploy:prod" for ch in chunks
    )
    assert (await executor.session(SID)).status == "idle"
    assert loopback.bodies()[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0_deploy",
        "content": "deploy:prod",
    }


async def test_a_denied_call_gets_a_denied_result(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("deploy", needs_approval=True)])
    loopback.script(tool_calls(("deploy", {"q": "prod"})))
    await turn(executor, a, "deploy it")
    await executor.respond_to_approval(
        SID, "approval-call_0_deploy", approved=False, reason="not today"
    )
    loopback.script(text("ok"))
    chunks = await turn(executor, a, None)
    assert [ch.reason for ch in chunks if isinstance(ch, c.ToolOutputDenied)] == ["not today"]
    assert ran.bodies == []
    assert json.loads(loopback.bodies()[-1]["messages"][-1]["content"]) == {
        "status": "denied",
        "reason": "not today",
    }
    ui = await executor.ui_messages(SID)
    assert ui[-1]["parts"][1]["state"] == "output-denied"


@pytest.mark.parametrize("switch_by", ["app-queued", "tool-same-step"])
async def test_a_switch_off_reaches_a_waiting_approval(
    executor: hs.Executor, loopback: LoopbackServer, switch_by: str
) -> None:
    ran = Ran()

    async def lock(input: Q, ctx: hs.ToolContext) -> str:
        await ctx.add_context([hs.disable_tools(["deploy"])])
        return "locked"

    a = agent(
        loopback,
        [
            ran.tool("deploy", needs_approval=True),
            hs.tool(name="lock", input_schema=Q, execute=lock),
        ],
    )
    if switch_by == "tool-same-step":
        loopback.script(tool_calls(("deploy", {"q": "prod"}), ("lock", {"q": "x"})))
        await turn(executor, a, "go")
    else:
        loopback.script(tool_calls(("deploy", {"q": "prod"})))
        await turn(executor, a, "go")
        await executor.add_context(SID, [hs.disable_tools(["deploy"])])
    # The switch-off is still queued (no model call since): the approval reads the queue too.
    assert any(
        e.items[0].get("disable") == ["deploy"] for e in await pending_context(executor.store, SID)
    )
    await executor.respond_to_approval(SID, "approval-call_0_deploy", approved=True)
    loopback.script(text("ok"))
    chunks = await turn(executor, a, None)
    assert ran.bodies == []
    assert [(ch.tool_name, ch.reason) for ch in chunks if isinstance(ch, c.ToolNotExecuted)] == [
        ("deploy", "tool_inactive")
    ]


async def test_unknown_approval_is_refused_and_writes_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    loopback.script(tool_calls(("deploy", {"q": "prod"})))
    await turn(executor, agent(loopback, [ran.tool("deploy", needs_approval=True)]), "go")
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.errors.StateError):
        await executor.respond_to_approval(SID, "approval-nope", approved=True)
    assert await snapshot(executor.store, SID) == before
    with pytest.raises(hs.SessionNotFoundError):
        await executor.respond_to_approval("nope", "approval-call_0_deploy", approved=True)


async def test_a_client_tool_pauses_until_the_client_answers(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ask = hs.tool(name="ask_user", input_schema=Q)
    a = agent(loopback, [ask])
    loopback.script(tool_calls(("ask_user", {"q": "Which city?"})))
    await turn(executor, a, "plan a trip")
    assert (await executor.session(SID)).status == "paused"
    await executor.submit_tool_result(SID, "call_0_ask_user", {"city": "Oslo"})
    loopback.script(text("Oslo it is."))
    chunks = await turn(executor, a, None)
    assert any(
        isinstance(ch, c.ToolOutputAvailable) and ch.output == {"city": "Oslo"} for ch in chunks
    )
    assert loopback.bodies()[-1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_0_ask_user",
        "content": '{"city": "Oslo"}',
    }


async def test_a_late_client_answer_becomes_a_late_answer_notice(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ask = hs.tool(name="ask_user", input_schema=Q)
    a = agent(loopback, [ask], client_tool_timeout=0.0)
    loopback.script(tool_calls(("ask_user", {"q": "Which city?"})))
    await turn(executor, a, "plan a trip")
    await executor.submit_tool_result(
        SID, "call_0_ask_user", {"city": "Oslo"}
    )  # after the 0 s deadline
    loopback.script(text("ok"))
    await turn(executor, a, None)
    messages = loopback.bodies()[-1]["messages"]
    assert json.loads(messages[-2]["content"])["status"] == "timeout"
    assert messages[-1]["role"] == "user"
    assert messages[-1]["content"].startswith(
        '<context kind="notice" source="late-answer">\nA late answer arrived'
    )
    assert "Oslo" in messages[-1]["content"]
    [row] = await executor.context_rows(SID)
    assert (row.kind, row.source) == ("notice", "late-answer")


async def test_a_new_message_cancels_a_waiting_call_on_its_own_message(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("deploy", needs_approval=True)])
    loopback.script(tool_calls(("deploy", {"q": "prod"})))
    await turn(executor, a, "deploy it")
    asked = (await executor.ui_messages(SID))[-1]
    loopback.script(text("ok"))
    chunks = await turn(executor, a, "something else")
    # The call's result names the message it belongs to; the call is not announced again.
    tool_chunks = [ch for ch in chunks if "tool_call_id" in dir(ch)]
    assert tool_chunks == [
        c.ToolSettled(
            message_id=asked["id"],
            tool_name="deploy",
            result=c.ToolCancelled(tool_call_id="call_0_deploy"),
        )
    ]
    assert ran.bodies == []
    sent = loopback.bodies()[-1]["messages"]
    assert json.loads(sent[-2]["content"])["status"] == "cancelled"
    assert sent[-1] == {"role": "user", "content": "something else"}
    messages = await executor.ui_messages(SID)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    cancelled = messages[1]["parts"][1]
    assert (cancelled["state"], cancelled["errorText"]) == (
        "output-error",
        "cancelled: a new message was sent",
    )
    assert [p["type"] for p in messages[3]["parts"]] == ["step-start", "text"]


async def test_running_a_paused_session_without_an_answer_is_refused(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    a = agent(loopback, [hs.tool(name="ask_user", input_schema=Q)])
    loopback.script(tool_calls(("ask_user", {"q": "?"})))
    await turn(executor, a, "go")
    requests = len(loopback.requests)
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.errors.StateError):
        await executor.run(a, SID, None).text()
    assert len(loopback.requests) == requests
    assert await snapshot(executor.store, SID) == before  # still paused, nothing counted


# -- forced completion ----------------------------------------------------------------------


class Answer(BaseModel):
    answer: str


async def test_the_agent_finishes_by_calling_finish(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    a = agent(loopback, [], output_schema=Answer)
    loopback.script(tool_calls(("__finish__", {"answer": "42"})), text("never"))
    result = executor.run(a, SID, "question")
    await result.consume()
    assert result.output == Answer(answer="42") and len(loopback.requests) == 1


async def test_forced_completion_calls_finish_even_after_a_switch_off_attempt(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("search")], output_schema=Answer, max_steps=2)
    # Validation refuses such an item; a row that says it anyway (written straight to the store)
    # must still not stop forced completion.
    await create_session(executor.store, SID, agent_name="gated")
    await executor.store.enqueue_context(
        SID,
        [{"kind": "tools", "disable": ["__finish__"], "source": "app"}],
        source="app",
        origin={"type": "app"},
    )
    loopback.script(
        tool_calls(("search", {"q": "1"})),
        tool_calls(("search", {"q": "2"})),
        tool_calls(("__finish__", {"answer": "done"})),
    )
    result = executor.run(a, SID, "question")
    await result.consume()
    bodies = loopback.bodies()
    assert len(bodies) == 3
    assert bodies[2]["tool_choice"] == {"type": "function", "function": {"name": "__finish__"}}
    assert "tool_choice" not in bodies[0]
    assert result.output == Answer(answer="done")
    assert "__finish__" in [r.disable[0] for r in await executor.context_rows(SID) if r.disable]
    assert "__finish__" in [t["function"]["name"] for t in bodies[0]["tools"]]


async def test_answers_arriving_together_are_all_kept(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    import asyncio

    ran = Ran()
    a = agent(
        loopback,
        [ran.tool("deploy", needs_approval=True), hs.tool(name="ask_user", input_schema=Q)],
    )
    loopback.script(
        tool_calls(("deploy", {"q": "a"}), ("deploy", {"q": "b"}), ("ask_user", {"q": "?"}))
    )
    await turn(executor, a, "go")
    await asyncio.gather(
        executor.respond_to_approval(SID, "approval-call_0_deploy", approved=True),
        executor.respond_to_approval(SID, "approval-call_1_deploy", approved=False, reason="no"),
        executor.submit_tool_result(SID, "call_2_ask_user", "yes"),
    )
    loopback.script(text("ok"))
    chunks = await turn(executor, a, None)
    assert ran.bodies == ["deploy"]
    assert [ch.tool_call_id for ch in chunks if isinstance(ch, c.ToolOutputDenied)] == [
        "call_1_deploy"
    ]
    assert [
        m["tool_call_id"] for m in loopback.bodies()[-1]["messages"] if m["role"] == "tool"
    ] == [
        "call_0_deploy",
        "call_1_deploy",
        "call_2_ask_user",
    ]
    meta = (await executor.session(SID)).meta
    assert not [k for k in meta if k.startswith(("approval:", "answer:"))]  # settled: cleared


async def test_answers_are_refused_while_the_session_runs(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    loopback.script(tool_calls(("deploy", {"q": "prod"})))
    await turn(executor, agent(loopback, [ran.tool("deploy", needs_approval=True)]), "go")
    await executor.store.set_status(SID, "running")
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.SessionBusyError):
        await executor.respond_to_approval(SID, "approval-call_0_deploy", approved=True)
    with pytest.raises(hs.SessionBusyError):
        await executor.submit_tool_result(SID, "call_0_deploy", "x")
    assert await snapshot(executor.store, SID) == before


async def test_a_retry_after_settling_keeps_the_settled_results(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    ran = Ran()
    a = agent(loopback, [ran.tool("deploy", needs_approval=True)])
    loopback.script(tool_calls(("deploy", {"q": "prod"})))
    await turn(executor, a, "deploy it")
    await executor.respond_to_approval(SID, "approval-call_0_deploy", approved=True)
    loopback.script(error(400, "the model call fails"))
    await turn(executor, a, None)
    assert (await executor.session(SID)).status == "failed" and ran.bodies == ["deploy"]
    await executor.retry(SID)
    roles = [r.role for r in await executor.log(SID)]
    assert roles == ["user", "assistant", "tool"]  # the approved call's result survived
    loopback.script(text("deployed"))
    assert await executor.run(a, SID, None).text() == "deployed"
    assert ran.bodies == ["deploy"]  # never run twice


async def test_a_gated_call_fires_no_tool_hook(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    events: list[tuple[str, Any]] = []
    hook = hs.define_hook(
        events={"action.result": lambda e, c: events.append((e.type, e.data["tool_name"]))}
    )
    ran = Ran()
    a = agent(loopback, [ran.tool("search"), ran.tool("calc")], hooks=[hook])
    await create_session(executor.store, SID, agent_name="gated")
    await executor.add_context(SID, [hs.disable_tools(["search"])])
    loopback.script(
        tool_calls(("search", {"q": "x"}), ("calc", {"q": "1"}), ("nope", {"q": "?"})), text("ok")
    )
    await turn(executor, a, "go")
    assert events == [("action.result", "calc")]
    assert ran.bodies == ["calc"]
