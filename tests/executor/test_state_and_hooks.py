"""define_state, the session context, sub-agents and define_hook."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from tests.loopback import LoopbackServer, error, text, tool_calls

budget = hs.define_state("test.budget", lambda: {"count": 0})


class Q(BaseModel):
    q: str


def agent(loopback: LoopbackServer, tools: list[hs.Tool] | None = None, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name=kw.pop("name", "stateful"),
        system="System.",
        model="openai/loopback",
        tools=tools or [],
        settings={
            "api_base": loopback.api_base,
            "api_key": "k",
        },
        **{"max_retries": 0, **kw},
    )


def counting_tool(seen: list[Any]) -> hs.Tool:
    async def count(input: Q, ctx: hs.ToolContext) -> int:
        await asyncio.sleep(0.01)  # let the other session run in between
        value = budget.update(lambda b: {"count": b["count"] + 1})["count"]
        seen.append((hs.current_session().id, value, ctx.session.id if ctx.session else None))
        return value

    return hs.tool(name="count", input_schema=Q, execute=count)


# -- define_state ---------------------------------------------------------------------------


def test_state_outside_a_run_has_no_active_context() -> None:
    with pytest.raises(hs.NoActiveContextError) as info:
        budget.get()
    assert info.value.code == "no_active_context"
    with pytest.raises(hs.NoActiveContextError):
        hs.current_session()


def test_reserved_names_are_refused_at_definition() -> None:
    with pytest.raises(hs.errors.InvalidRequestError, match=r"helix\."):
        hs.define_state("helix.mine", lambda: 0)


async def test_values_must_be_json_safe_and_the_error_names_the_slot(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    bad = hs.define_state("test.bad", lambda: 0)
    errors: list[str] = []

    def store_set(input: Q) -> str:
        try:
            bad.update(lambda _: {1, 2})
        except hs.errors.InvalidRequestError as exc:
            errors.append(exc.message)
        return "ok"

    loopback.script(tool_calls(("set", {"q": "x"})), text("ok"))
    await executor.run(
        agent(loopback, [hs.tool(name="set", input_schema=Q, execute=store_set)]), "s", "go"
    ).consume()
    assert len(errors) == 1 and "'test.bad'" in errors[0] and "JSON-safe" in errors[0]


async def test_two_concurrent_sessions_never_see_each_others_state(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[Any] = []
    a = agent(loopback, [counting_tool(seen)])
    loopback.script(
        *[tool_calls(("count", {"q": "x"})) for _ in range(6)], *[text("done") for _ in range(2)]
    )
    a.max_steps = 3
    await asyncio.gather(
        executor.run(a, "s-a", "go").consume(), executor.run(a, "s-b", "go").consume()
    )
    by_session: dict[str, list[int]] = {}
    for session_id, value, ctx_session in seen:
        assert session_id == ctx_session
        by_session.setdefault(session_id, []).append(value)
    assert by_session == {"s-a": [1, 2, 3], "s-b": [1, 2, 3]}


async def test_state_persists_across_turns_and_processes_and_is_restored_on_retry(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    path = str(tmp_path / "state.db")
    seen: list[Any] = []
    first = hs.Executor(store=hs.SQLiteStore(path))
    a = agent(loopback, [counting_tool(seen)])
    loopback.script(
        tool_calls(("count", {"q": "x"})),
        text("one"),
        tool_calls(("count", {"q": "x"})),
        text("two"),
    )
    await first.run(a, "s", "go").consume()
    [_, after_first_turn] = await first.checkpoints("s")
    await first.run(a, "s", "again").consume()
    assert [v for _, v, _ in seen] == [1, 2]  # not reset between turns
    await first.store.close()

    second = hs.Executor(store=hs.SQLiteStore(path))  # a new process, as far as state goes
    loopback.script(tool_calls(("count", {"q": "x"})), text("three"))
    await second.run(a, "s", "more").consume()
    assert [v for _, v, _ in seen] == [1, 2, 3]
    await second.retry("s", after_first_turn.id)  # back to the snapshot with count == 1
    loopback.script(tool_calls(("count", {"q": "x"})), text("retried"))
    await second.run(a, "s", "again, retried").consume()
    assert [v for _, v, _ in seen] == [1, 2, 3, 2]
    await second.store.close()


# -- session context and sub-agents -----------------------------------------------------------


async def test_session_context_in_tools_and_sub_agents(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: dict[str, Any] = {}

    def child_tool(input: Q) -> str:
        info = hs.current_session()
        seen["child"] = info
        seen["child_budget"] = budget.update(lambda b: {"count": b["count"] + 100})
        return "child done"

    def parent_tool(input: Q) -> str:
        seen["parent"] = hs.current_session()
        budget.update(lambda b: {"count": b["count"] + 1})
        return "parent done"

    child = agent(
        loopback, [hs.tool(name="inner", input_schema=Q, execute=child_tool)], name="child"
    )
    parent = agent(
        loopback,
        [
            hs.tool(name="outer", input_schema=Q, execute=parent_tool),
            child.as_tool(name="ask_child"),
        ],
    )
    loopback.script(
        tool_calls(("outer", {"q": "x"})),
        tool_calls(("ask_child", {"prompt": "help"}), call_ids=["call_child"]),
        tool_calls(("inner", {"q": "y"})),  # the child's first step
        text("child answer"),  # the child's second step
        text("parent answer"),
    )
    result = executor.run(parent, "p-1", "go", auth="ada")
    assert await result.text() == "parent answer"
    p, ch = seen["parent"], seen["child"]
    assert (p.id, p.turn.sequence, p.auth.current, p.auth.initiator, p.parent) == (
        "p-1",
        1,
        "ada",
        "ada",
        None,
    )
    assert ch.id == "p-1/call_child"
    assert (
        ch.parent.call_id,
        ch.parent.session_id,
        ch.parent.root_session_id,
        ch.parent.turn.id,
    ) == (
        "call_child",
        "p-1",
        "p-1",
        p.turn.id,
    )
    assert seen["child_budget"] == {"count": 100}  # fresh state, never the parent's
    assert (await executor.session("p-1/call_child")).parent_id == "p-1"
    steps = await result.steps()
    assert steps[1].tool_results[0].output == "child answer"


async def test_turn_sequence_and_the_unprotected_agent(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    turns: list[Any] = []

    def who(input: Q) -> str:
        info = hs.current_session()
        turns.append((info.turn.sequence, info.auth.current, info.auth.initiator))
        return "ok"

    a = agent(loopback, [hs.tool(name="who", input_schema=Q, execute=who)])
    loopback.script(
        tool_calls(("who", {"q": "x"})), text("1"), tool_calls(("who", {"q": "x"})), text("2")
    )
    await executor.run(a, "s", "go").consume()
    await executor.run(a, "s", "again").consume()
    assert turns == [(1, None, None), (2, None, None)]


# -- define_hook ----------------------------------------------------------------------------


def test_an_unknown_event_is_refused_at_definition() -> None:
    with pytest.raises(hs.errors.InvalidRequestError, match=r"turn\.begun"):
        hs.define_hook(events={"turn.begun": lambda e, c: None})


async def test_hook_order_every_typed_handler_then_every_star_handler(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    log: list[str] = []

    def rec(tag: str) -> Any:
        async def handler(event: hs.LifecycleEvent, ctx: hs.HookContext) -> str:
            log.append(f"{tag}:{event.type}")
            assert ctx.session.id == "s"
            return "ignored"

        return handler

    first = hs.define_hook(events={"*": rec("first*"), "turn.started": rec("first")})
    second = hs.define_hook(events={"turn.started": rec("second"), "*": rec("second*")})
    loopback.script(tool_calls(("noop", {"q": "x"})), text("ok"))
    noop = hs.tool(name="noop", input_schema=Q, execute=lambda i: "ok")
    await executor.run(agent(loopback, [noop], hooks=[first, second]), "s", "go").consume()
    types = [entry.split(":")[1] for entry in log if entry.startswith("first*")]
    assert types == [
        "session.started",
        "turn.started",
        "step.started",
        "message.completed",
        "action.result",
        "step.completed",
        "step.started",
        "message.completed",
        "step.completed",
        "turn.completed",
    ]
    # The session model's registry: every hook's typed handler, then every hook's `*`.
    assert log[2:6] == [
        "first:turn.started",
        "second:turn.started",
        "first*:turn.started",
        "second*:turn.started",
    ]


async def test_a_star_only_hook_runs_after_a_later_hooks_typed_handler(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    log: list[str] = []

    def rec(tag: str) -> Any:
        return lambda event, ctx: log.append(tag) if event.type == "turn.started" else None

    h1 = hs.define_hook(events={"*": rec("h1:*")})
    h2 = hs.define_hook(events={"turn.started": rec("h2:typed"), "*": rec("h2:*")})
    loopback.script(text("ok"))
    await executor.run(agent(loopback, hooks=[h1, h2]), "s", "go").consume()
    assert log == ["h2:typed", "h1:*", "h2:*"]


async def test_hooks_run_after_the_event_is_recorded(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    observed: list[Any] = []

    async def on_step(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        observed.append(
            (len(await executor.checkpoints("s")), (await executor.session("s")).status)
        )

    async def on_done(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        observed.append((event.type, (await executor.session("s")).status))

    hook = hs.define_hook(events={"step.completed": on_step, "turn.completed": on_done})
    loopback.script(text("ok"))
    await executor.run(agent(loopback, hooks=[hook]), "s", "go").consume()
    # The last step's write records the step and the turn's end together.
    assert observed == [(1, "idle"), ("turn.completed", "idle")]


async def test_a_raising_hook_fails_the_turn_but_not_the_session(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    events: list[str] = []
    fail = {"on": True}

    def boom(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        if fail["on"]:
            raise RuntimeError("hook bug")

    hook = hs.define_hook(
        events={
            "turn.started": boom,
            "turn.failed": lambda e, c: events.append(e.type),
            "session.failed": lambda e, c: events.append(e.type),
        }
    )
    a = agent(loopback, hooks=[hook])
    result = executor.run(a, "s", "go")
    await result.consume()
    assert isinstance(result.error, hs.errors.HookError) and result.error.event == "turn.started"
    assert events == ["turn.failed"] and loopback.requests == []
    fail["on"] = False
    loopback.script(text("fine"))
    assert await executor.run(a, "s", "again").text() == "fine"  # the session is still usable


async def test_a_raising_failure_handler_escalates_to_session_failed(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    events: list[str] = []

    def bad_failure_handler(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        events.append(event.type)
        raise RuntimeError("the failure handler fails too")

    hook = hs.define_hook(
        events={
            "turn.failed": bad_failure_handler,
            "session.failed": lambda e, c: events.append(e.type),
        }
    )
    loopback.script(error(500, "down"))
    await executor.run(agent(loopback, hooks=[hook]), "s", "go").consume()
    assert events == ["turn.failed", "session.failed"]
    assert (await executor.session("s")).status == "failed"


async def test_a_hook_can_add_context_first_wins(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    async def steer(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        assert await ctx.add_context([hs.instruction("Be brief.")]) == 1

    hook = hs.define_hook(events={"turn.started": steer})
    loopback.script(text("ok"))
    await executor.run(agent(loopback, hooks=[hook]), "s", "go").consume()
    [row] = await executor.context_rows("s")
    assert (row.source, row.content) == ("app", "Be brief.")


async def test_a_resumed_turn_does_not_start_again(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    recorded: list[int] = []
    runs: list[int] = []

    async def steer(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        runs.append(ctx.session.turn.sequence)
        recorded.append(await ctx.add_context([hs.notice(f"run {len(runs)}")]))

    hook = hs.define_hook(events={"turn.started": steer})
    a = agent(loopback, [hs.tool(name="ask", input_schema=Q)], hooks=[hook])
    loopback.script(tool_calls(("ask", {"q": "?"})))
    await executor.run(a, "s", "go").consume()
    await executor.submit_tool_result("s", "call_0_ask", "yes")
    loopback.script(text("ok"))
    await executor.run(a, "s", None).consume()  # continues the paused turn's message id
    # The resumed run is the same turn (sequence 1), carried on: "turn.started" brackets a
    # turn once however many pauses it has, so a per-turn budget reset there holds.
    assert recorded == [1] and runs == [1]
    assert [r.content for r in await executor.context_rows("s")] == ["run 1"]
    loopback.script(text("next"))
    await executor.run(a, "s", "again").consume()
    assert runs == [1, 2]


def test_a_sub_agent_run_is_refused_for_what_is_not_an_agent_and_nothing_is_written() -> None:
    # The session scope types its child runner with a small protocol (state.py sits below
    # agent.py); the executor, which runs the child, checks it was given an hs.Agent.
    from helix_stream.state import ParentInfo, TurnInfo

    class NotAnAgent:
        name = "helper"

    store = hs.MemoryStore()
    parent = ParentInfo(
        call_id="c1", session_id="s", root_session_id="s", turn=TurnInfo(id="m1", sequence=1)
    )
    with pytest.raises(hs.errors.InvalidRequestError, match=r"hs\.Agent, not NotAnAgent"):
        hs.Executor(store)._run_child(NotAnAgent(), "s/c1", "hi", auth=None, parent=parent)
    assert store.write_transactions == 0
