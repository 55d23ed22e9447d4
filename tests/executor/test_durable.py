"""Checkpoints, rewinds and branches (README, "Durable sessions")."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.session._meta import TurnMeta
from tests._store import create_session, pending_context
from tests.loopback import LoopbackServer, error, text, tool_calls

SID = "durable-1"


class Q(BaseModel):
    q: str


def agent(loopback: LoopbackServer, tools: list[hs.Tool] | None = None, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="durable",
        system="System.",
        model="openai/loopback",
        tools=tools or [hs.tool(name="noop", input_schema=Q, execute=lambda i: "ok")],
        settings={
            "api_base": loopback.api_base,
            "api_key": "k",
        },
        **{"max_retries": 0, **kw},
    )


def rendered(loopback: LoopbackServer, index: int = -1) -> list[str]:
    """The context envelopes of one request, in order."""
    return [
        m["content"]
        for m in loopback.bodies()[index]["messages"]
        if "<context" in str(m.get("content"))
    ]


async def test_a_checkpoint_follows_each_step(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    counter = hs.define_state("test.counter", lambda: 0)

    def count(input: Q) -> str:
        counter.update(lambda n: n + 1)
        return "counted"

    await create_session(executor.store, SID, agent_name="durable")
    await executor.add_context(SID, [hs.disable_tools(["other"])])
    loopback.script(tool_calls(("count", {"q": "a"})), text("done"))
    await executor.run(
        agent(loopback, [hs.tool(name="count", input_schema=Q, execute=count)]), SID, "go"
    ).consume()
    checkpoints = await executor.checkpoints(SID)
    log = await executor.log(SID)
    assert [cp.step_number for cp in checkpoints] == [0, 1]
    assert [cp.log_seq for cp in checkpoints] == [4, 5]  # user, row, assistant+tool | assistant
    assert log[checkpoints[0].log_seq - 1].role == "tool" and log[-1].seq == checkpoints[1].log_seq
    assert [cp.state["slots"] for cp in checkpoints] == [{"test.counter": 1}, {"test.counter": 1}]
    assert checkpoints[0].state["inactive"] == ["other"]


async def test_retry_to_a_checkpoint_redelivers_truncated_items_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    a = agent(loopback)
    loopback.script(text("first"))
    await executor.run(a, SID, "one").consume()
    [first_cp] = await executor.checkpoints(SID)
    await executor.add_context(SID, [hs.instruction("Answer in French.")])
    loopback.script(text("second"))
    await executor.run(a, SID, "two").consume()
    assert len(await executor.context_rows(SID)) == 1
    await executor.retry(SID, first_cp.id)
    assert await executor.context_rows(SID) == []
    assert (await executor.log(SID))[-1].seq == first_cp.log_seq
    loopback.script(text("again"), text("and again"))
    await executor.run(a, SID, "two, retried").consume()
    await executor.run(a, SID, "three").consume()
    assert [r.content for r in await executor.context_rows(SID)] == ["Answer in French."]  # once
    assert rendered(loopback) == [
        '<context kind="instruction" source="app">\nAnswer in French.\n</context>'
    ]


async def test_a_rewind_reverts_the_cursor_memory_and_active_tools(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    cursors: list[Any] = []
    recalls: list[str] = []

    def step_context(req: hs.StepContextRequest) -> Any:
        cursors.append(req.cursor)
        n = (req.cursor or 0) + 1
        return {"items": [hs.notice(f"update {n}")], "cursor": n}

    def recall(session_id: str, message: str) -> list[dict[str, str]]:
        recalls.append(message)
        return [{"id": "m1", "content": "Likes tea."}]

    a = agent(loopback, step_context=step_context, memory=recall)
    loopback.script(text("one"))
    await executor.run(a, SID, "first").consume()
    [cp] = await executor.checkpoints(SID)
    await executor.add_context(SID, [hs.disable_tools(["noop"])])
    loopback.script(text("two"))
    await executor.run(a, SID, "second").consume()
    assert cursors == [None, 1]
    await executor.retry(SID, cp.id)
    loopback.script(tool_calls(("noop", {"q": "x"})), text("three"))
    chunks = [ch async for ch in executor.run(a, SID, "second again")]
    # The hook produces again from the surviving cursor; memory was kept (its row survived);
    # the switch-off's row was truncated, so it is delivered again — once.
    assert cursors == [None, 1, 1, 2]
    assert (
        recalls.count("second again") == 2
        and len([r for r in await executor.context_rows(SID) if r.kind == "memory"]) == 1
    )
    assert [ch.reason for ch in chunks if isinstance(ch, c.ToolNotExecuted)] == ["tool_inactive"]
    assert [r.disable for r in await executor.context_rows(SID) if r.kind == "tools"] == [["noop"]]


async def test_a_rewind_takes_a_tools_items_with_its_call(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    async def lock(input: Q, ctx: hs.ToolContext) -> str:
        await ctx.add_context([hs.instruction(f"Locked by {input.q}.")])
        return "locked"

    a = agent(loopback, [hs.tool(name="lock", input_schema=Q, execute=lock)])
    loopback.script(text("hi"))
    await executor.run(a, SID, "start").consume()
    [start_cp] = await executor.checkpoints(SID)
    loopback.script(
        tool_calls(("lock", {"q": "kept"}), call_ids=["call_kept"]),
        tool_calls(("lock", {"q": "removed"}), call_ids=["call_removed"]),
        text("ok"),
    )
    await executor.run(a, SID, "lock twice").consume()
    cps = await executor.checkpoints(SID)
    assert [r.content for r in await executor.context_rows(SID)] == [
        "Locked by kept.",
        "Locked by removed.",
    ]
    # Rewind to just after the step of the first call: its item stays; the second call goes,
    # and with it the item it queued.
    await executor.retry(SID, cps[1].id)
    loopback.script(text("ok"))
    await executor.run(a, SID, None).consume()
    assert [r.content for r in await executor.context_rows(SID)] == ["Locked by kept."]
    # ...and rewinding before both calls removes both, without redelivering either.
    await executor.retry(SID, start_cp.id)
    loopback.script(text("ok"))
    await executor.run(a, SID, "again").consume()
    assert await executor.context_rows(SID) == []
    assert await pending_context(executor.store, SID) == []


async def test_retry_after_a_committed_step_keeps_the_failed_steps_rows(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    calls: list[Any] = []

    def step_context(req: hs.StepContextRequest) -> Any:
        calls.append(req.cursor)
        return {"items": [hs.notice(f"tick {req.cursor or 0}")], "cursor": (req.cursor or 0) + 1}

    a = agent(loopback, step_context=step_context)
    await create_session(executor.store, SID, agent_name="durable")
    loopback.script(tool_calls(("noop", {"q": "x"})), error(500, "down"))
    result = executor.run(a, SID, "go")
    await result.consume()
    assert (
        isinstance(result.error, hs.ModelError) and (await executor.session(SID)).status == "failed"
    )
    rows_before = [r.content for r in await executor.context_rows(SID)]
    assert rows_before == ["tick 0", "tick 1"]
    await executor.retry(SID)
    loopback.script(text("recovered"))
    await executor.run(a, SID, None).consume()
    # The failed step's row is kept (not re-made); the hook goes on from its cursor.
    assert [r.content for r in await executor.context_rows(SID)] == ["tick 0", "tick 1", "tick 2"]
    assert calls == [None, 1, 2]


async def test_a_first_step_failure_is_retried_from_its_start_never_lost_never_doubled(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    calls: list[Any] = []

    def step_context(req: hs.StepContextRequest) -> Any:
        calls.append(req.cursor)
        return {"items": [hs.notice(f"tick {req.cursor or 0}")], "cursor": (req.cursor or 0) + 1}

    a = agent(loopback, step_context=step_context)
    await create_session(executor.store, SID, agent_name="durable")
    await executor.add_context(SID, [hs.instruction("Queued before the turn.")])
    loopback.script(error(500, "down"))
    await executor.run(a, SID, "go").consume()
    assert [r.content for r in await executor.context_rows(SID)] == [
        "Queued before the turn.",
        "tick 0",
    ]
    await executor.retry(SID)
    assert await executor.context_rows(SID) == []  # the first step's rows are re-made...
    loopback.script(text("ok"))
    await executor.run(a, SID, None).consume()
    rows = [r.content for r in await executor.context_rows(SID)]
    assert rows == ["Queued before the turn.", "tick 0"]  # ...once each
    assert calls == [None, None]  # the hook was called again from the cursor before them
    users = [r.payload["content"] for r in await executor.log(SID) if r.role == "user"]
    assert users == ["go"]


async def test_a_branch_copies_rows_but_never_the_queue(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    a = agent(
        loopback,
        step_context=lambda req: (
            {"items": [hs.notice("feed")], "cursor": "c9"} if req.cursor is None else None
        ),
    )
    await create_session(executor.store, SID, agent_name="durable")
    await executor.add_context(SID, [hs.disable_tools(["noop"])])
    loopback.script(text("one"))
    await executor.run(a, SID, "first").consume()
    [cp] = await executor.checkpoints(SID)
    await executor.add_context(SID, [hs.instruction("Only for the source.")])
    branch = await executor.branch(SID, cp.id, new_session_id="durable-branch")
    assert branch == "durable-branch"
    assert (await executor.session(branch)).parent_id == SID
    assert [(r.kind, r.cursor) for r in await executor.context_rows(branch)] == [
        ("tools", None),
        ("notice", "c9"),
    ]
    branched = await executor.store.get_session(branch)
    assert branched is not None and TurnMeta.read(branched.meta).start_seq == cp.log_seq
    assert await pending_context(executor.store, branch) == []
    loopback.script(tool_calls(("noop", {"q": "x"})), text("b"))
    chunks = [ch async for ch in executor.run(a, branch, "in the branch")]
    assert [ch.reason for ch in chunks if isinstance(ch, c.ToolNotExecuted)] == [
        "tool_inactive"
    ]  # effect kept
    assert "Only for the source." not in str(loopback.bodies()[-1])
    loopback.script(text("s"))
    await executor.run(a, SID, "in the source").consume()
    assert (
        rendered(loopback)[-1]
        == '<context kind="instruction" source="app">\nOnly for the source.\n</context>'
    )


async def test_rewind_and_branch_refusals_write_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    import pytest

    from tests.executor._util import snapshot

    a = agent(loopback, [hs.tool(name="ask", input_schema=Q)])
    loopback.script(text("one"))
    await executor.run(a, SID, "first").consume()
    await executor.branch(SID, new_session_id="taken")
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.StateError, match="no checkpoint"):
        await executor.retry(SID, "no-such-checkpoint")
    with pytest.raises(hs.errors.InvalidRequestError, match="mode"):
        await executor.resume(SID, mode="sideways")
    with pytest.raises(hs.errors.InvalidRequestError, match="checkpoint_id"):
        await executor.resume(SID, mode="from_checkpoint")
    with pytest.raises(hs.StateError):
        await executor.branch(SID, new_session_id="taken")
    with pytest.raises(hs.StateError, match="no tool call"):
        await executor.submit_tool_result(SID, "call_nope", {"x": 1})
    with pytest.raises(hs.SessionNotFoundError):
        await executor.retry("nope")
    assert await snapshot(executor.store, SID) == before
    # A running session is refused too (another process may be running it).
    await executor.store.set_status(SID, "running")
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.SessionBusyError):
        await executor.retry(SID)
    assert await snapshot(executor.store, SID) == before


async def test_a_started_turn_closed_unread_ends_at_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    # Regression: Executor.start's result, closed before it was iterated, left the session
    # "running" until the garbage collector finalized the turn.
    loopback.script(text("slow answer", pieces=2, hang=True))
    run = await executor.start(agent(loopback), SID, "hi")
    assert (await executor.session(SID)).status == "running"
    await run.aclose()
    assert (await executor.session(SID)).status == "idle"
