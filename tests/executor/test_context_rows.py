"""Context rows end to end: add_context, keys, the context pass, rendering, prefix stability."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c
from tests._store import pending_context
from tests.executor._util import assert_prefix_stable, messages_bytes, snapshot
from tests.loopback import LoopbackServer, text, tool_calls

SID = "session-1"


class CityInput(BaseModel):
    city: str


def agent_for(loopback: LoopbackServer, tools: list[hs.Tool] | None = None, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="helper",
        system="You are a careful assistant.",
        model="openai/loopback",
        tools=tools or [],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
        **kw,
    )


async def start_session(executor: hs.Executor, loopback: LoopbackServer) -> None:
    loopback.script(text("hello"))
    await executor.run(agent_for(loopback), SID, "hi").consume()


# -- validation and refusals ----------------------------------------------------------------


@pytest.mark.parametrize(
    "items",
    [
        pytest.param([hs.instruction("ok"), {"kind": "shout", "content": "x"}], id="unknown-kind"),
        pytest.param([hs.disable_tools(["__finish__"])], id="finish-off"),
        pytest.param([hs.notice("x" * (33 * 1024))], id="over-32KiB"),
        pytest.param([{"kind": "notice", "content": "x", "source": "hook"}], id="hook-source"),
        pytest.param([{"kind": "instruction", "content": "x", "extra": 1}], id="unknown-field"),
        pytest.param([{"kind": "tools"}], id="empty-tools"),
    ],
)
async def test_invalid_items_are_refused_and_nothing_is_written(
    executor: hs.Executor, loopback: LoopbackServer, items: list[Any]
) -> None:
    await start_session(executor, loopback)
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.ContextValidationError) as info:
        await executor.add_context(SID, items)
    assert info.value.code == "validation_error" and info.value.http_status == 400
    assert not info.value.retryable
    assert await snapshot(executor.store, SID) == before


async def test_unknown_session_is_refused_and_nothing_is_written(executor: hs.Executor) -> None:
    before = await snapshot(executor.store, "nope")
    with pytest.raises(hs.SessionNotFoundError) as info:
        await executor.add_context("nope", [hs.instruction("x")])
    assert info.value.code == "state_session_not_found" and info.value.http_status == 404
    assert await snapshot(executor.store, "nope") == before
    assert await executor.store.get_session("nope") is None


# -- names the agent does not have --------------------------------------------------------


async def test_a_tool_the_agent_lacks_is_recorded_with_a_warning(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    weather = hs.tool(name="get_weather", input_schema=CityInput, execute=lambda i: "sunny")
    agent = agent_for(loopback, [weather])
    await start_session(executor, loopback)
    items = [
        hs.disable_tools(["get_weather", "web_serch", "github__delete_repo"]),
        hs.enable_tools(["web_serch"]),
        hs.instruction("Be brief."),
    ]
    added = await executor.add_context_for(agent, SID, items, key="k1")
    assert added == hs.ContextAdded(
        recorded=3, warnings=("unknown tool 'web_serch'", "unknown tool 'github__delete_repo'")
    )
    # Recorded as given, the unknown names too (an MCP server may bring them later).
    queued = [e.items for e in await pending_context(executor.store, SID)]
    assert [i.get("disable") for i in queued[0]] == [
        ["get_weather", "web_serch", "github__delete_repo"], None, None,
    ]  # fmt: skip
    # A retry under the same key records nothing, and still says what is wrong with the items.
    again = await executor.add_context_for(agent, SID, items, key="k1")
    assert (again.recorded, len(again.warnings)) == (0, 2)
    known = await executor.add_context_for(agent, SID, [hs.enable_tools(["get_weather"])])
    assert known == hs.ContextAdded(recorded=1)
    # add_context knows no agent: the count, as ever.
    assert await executor.add_context(SID, [hs.disable_tools(["nope"])]) == 1


async def test_add_context_for_refuses_as_add_context_does_and_writes_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    agent = agent_for(loopback)
    await start_session(executor, loopback)
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.ContextValidationError):
        await executor.add_context_for(agent, SID, [hs.disable_tools(["x"]), {"kind": "shout"}])
    assert await snapshot(executor.store, SID) == before
    with pytest.raises(hs.SessionNotFoundError):
        await executor.add_context_for(agent, "nope", [hs.disable_tools(["x"])])
    assert await executor.store.get_session("nope") is None


# -- keys ----------------------------------------------------------------------------------


async def test_same_key_same_items_records_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    items = [hs.instruction("Answer in French."), hs.disable_tools(["web_search"])]
    assert await executor.add_context(SID, items, key="lang-1") == 2
    before = await snapshot(executor.store, SID)
    assert await executor.add_context(SID, items, key="lang-1") == 0
    assert await snapshot(executor.store, SID) == before


@pytest.mark.parametrize(
    "other",
    [
        pytest.param(
            [hs.instruction("Answer in German."), hs.disable_tools(["web_search"])], id="changed"
        ),
        pytest.param([hs.instruction("Answer in French.")], id="fewer"),
        pytest.param(
            [hs.instruction("Answer in French."), hs.disable_tools(["web_search"]), hs.notice("n")],
            id="more",
        ),
    ],
)
async def test_same_key_other_items_conflicts_and_writes_nothing(
    executor: hs.Executor, loopback: LoopbackServer, other: list[Any]
) -> None:
    await start_session(executor, loopback)
    await executor.add_context(
        SID, [hs.instruction("Answer in French."), hs.disable_tools(["web_search"])], key="k"
    )
    before = await snapshot(executor.store, SID)
    with pytest.raises(hs.ContextKeyConflictError) as info:
        await executor.add_context(SID, other, key="k")
    assert (info.value.code, info.value.http_status, info.value.retryable) == (
        "state_context_key_conflict",
        409,
        False,
    )
    assert await snapshot(executor.store, SID) == before


async def test_without_a_key_every_call_records(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    assert await executor.add_context(SID, [hs.notice("a")]) == 1
    assert await executor.add_context(SID, [hs.notice("a")]) == 1
    assert len(await pending_context(executor.store, SID)) == 2


async def test_concurrent_same_key_calls_record_once(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    counts = await asyncio.gather(
        *[executor.add_context(SID, [hs.notice("once")], key="race") for _ in range(20)]
    )
    assert sorted(counts) == [0] * 19 + [1]
    assert len(await pending_context(executor.store, SID)) == 1


# -- the context pass ----------------------------------------------------------------------


async def test_one_transaction_per_context_pass(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    for i in range(5):
        await executor.add_context(SID, [hs.notice(f"n{i}"), hs.instruction(f"i{i}")])
    store = executor.store
    measured: list[tuple[int, int]] = []
    original = store.write_turn

    async def counting(session_id: str, write: Any) -> Any:
        before = store.write_transactions
        result = await original(session_id, write)
        if write.deliver_queue:  # a context pass (the first carries the user's message too)
            rows = [r for r in result.records if r.role == "context"]
            measured.append((len(rows), store.write_transactions - before))
        return result

    store.write_turn = counting  # type: ignore[method-assign]
    loopback.script(text("ok"))
    chunks = [ch async for ch in executor.run(agent_for(loopback), SID, "next")]
    assert measured == [(10, 1)]
    rows = [ch.row for ch in chunks if isinstance(ch, c.ContextRowChunk)]
    assert [r.content for r in rows] == ["n0", "i0", "n1", "i1", "n2", "i2", "n3", "i3", "n4", "i4"]
    assert [r.seq for r in rows] == list(range(rows[0].seq, rows[0].seq + 10))
    assert await pending_context(store, SID) == []


async def test_rows_reach_the_very_next_call_in_their_form(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    await executor.add_context(
        SID,
        [
            hs.instruction("Answer in French."),
            {"kind": "notice", "content": "Upload done.", "source": "late-answer"},
        ],
    )
    loopback.script(text("ok"))
    await executor.run(agent_for(loopback), SID, "next").consume()
    messages = loopback.bodies()[-1]["messages"]
    assert messages[-3:] == [
        {"role": "user", "content": "next"},
        {
            "role": "system",
            "content": '<context kind="instruction" source="app">\nAnswer in French.\n</context>',
        },
        {
            "role": "user",
            "content": '<context kind="notice" source="late-answer">\nUpload done.\n</context>',
        },
    ]
    assert messages[0] == {"role": "system", "content": "You are a careful assistant."}


async def test_items_added_while_running_reach_the_next_step(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    statuses: list[str] = []

    async def busy(input: CityInput, ctx: hs.ToolContext) -> str:
        statuses.append((await executor.session(SID)).status)
        await executor.add_context(
            SID, [hs.disable_tools(["busy"]), hs.instruction("Be quick.")], key="mid-run"
        )
        return "done"

    loopback.script(tool_calls(("busy", {"city": "x"})), text("ok"))
    await executor.run(
        agent_for(loopback, [hs.tool(name="busy", input_schema=CityInput, execute=busy)]), SID, "go"
    ).consume()
    assert statuses == ["running"]
    second = loopback.bodies()[1]["messages"]
    assert second[-2:] == [
        {
            "role": "system",
            "content": '<context kind="tools" source="app">\nSwitched off: busy.\n</context>',
        },
        {
            "role": "system",
            "content": '<context kind="instruction" source="app">\nBe quick.\n</context>',
        },
    ]
    assert second[-3]["role"] == "tool"


async def test_tool_items_carry_source_tool_whatever_they_say(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    async def upload(input: CityInput, ctx: hs.ToolContext) -> dict[str, bool]:
        n = await ctx.add_context(
            [{"kind": "instruction", "content": f"Do not edit {input.city}.", "source": "app"}]
        )
        assert n == 1
        return {"started": True}

    loopback.script(tool_calls(("upload", {"city": "a.txt"})), text("ok"))
    await executor.run(
        agent_for(loopback, [hs.tool(name="upload", input_schema=CityInput, execute=upload)]),
        SID,
        "go",
    ).consume()
    [row] = await executor.context_rows(SID)
    assert (row.kind, row.source, row.content) == ("instruction", "tool", "Do not edit a.txt.")
    assert row.origin["tool_call_id"] == "call_0_upload" and row.origin["position"] == 0
    assert loopback.bodies()[1]["messages"][-1] == {
        "role": "user",
        "content": '<context kind="instruction" source="tool">\nDo not edit a.txt.\n</context>',
    }


async def test_a_rerun_call_site_queues_nothing_twice(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    recorded: list[int] = []

    async def upload(input: CityInput, ctx: hs.ToolContext) -> str:
        recorded.append(await ctx.add_context([hs.notice(f"first {input.city}")]))
        recorded.append(await ctx.add_context([hs.notice("second")]))
        return "ok"

    tool = hs.tool(name="upload", input_schema=CityInput, execute=upload)
    # The model repeats the same call id: the same call site runs again (re-execution).
    loopback.script(
        tool_calls(("upload", {"city": "a"}), call_ids=["call_same"]),
        tool_calls(("upload", {"city": "b"}), call_ids=["call_same"]),
        text("ok"),
    )
    await executor.run(agent_for(loopback, [tool]), SID, "go").consume()
    assert recorded == [1, 1, 0, 0]
    assert [r.content for r in await executor.context_rows(SID)] == ["first a", "second"]


async def test_prefix_is_byte_identical_across_a_three_call_session(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    async def upload(input: CityInput, ctx: hs.ToolContext) -> str:
        await ctx.add_context([hs.notice(f"Uploading {input.city}.")])
        return "started"

    agent = agent_for(loopback, [hs.tool(name="upload", input_schema=CityInput, execute=upload)])
    loopback.script(tool_calls(("upload", {"city": "a.txt"})), text("Upload started."))
    await executor.run(agent, SID, "Upload a.txt").consume()
    await executor.add_context(
        SID, [hs.instruction("Answer in French."), hs.disable_tools(["upload"])]
    )
    loopback.script(text("D'accord."))
    await executor.run(agent, SID, "Thanks").consume()
    assert len(loopback.requests) == 3
    assert_prefix_stable(loopback.requests)
    systems = [b["messages"][0] for b in loopback.bodies()]
    assert systems == [{"role": "system", "content": "You are a careful assistant."}] * 3
    tools_offered = [json.dumps(b["tools"]) for b in loopback.bodies()]
    assert len(set(tools_offered)) == 1
    assert messages_bytes(loopback.requests[2]).count(b"<context") == 3


# -- sessions in every state and the UI view ------------------------------------------------


async def test_add_context_works_on_idle_and_paused_sessions(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    assert (await executor.session(SID)).status == "idle"
    assert await executor.add_context(SID, [hs.notice("while idle")]) == 1
    ask = hs.tool(name="ask_user", input_schema=CityInput)  # no execute: a client tool
    loopback.script(tool_calls(("ask_user", {"city": "?"})))
    await executor.run(agent_for(loopback, [ask]), SID, "ask me").consume()
    assert (await executor.session(SID)).status == "paused"
    assert await executor.add_context(SID, [hs.notice("while paused")]) == 1
    assert [e.items[0]["content"] for e in await pending_context(executor.store, SID)] == [
        "while paused"
    ]


async def test_ui_messages_never_contain_context_rows(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    await executor.add_context(SID, [hs.instruction("SECRET-INSTRUCTION")])
    loopback.script(text("ok"))
    await executor.run(agent_for(loopback), SID, "next").consume()
    ui = await executor.ui_messages(SID)
    assert [(m["role"], m["parts"][-1]["text"]) for m in ui] == [
        ("user", "hi"),
        ("assistant", "hello"),
        ("user", "next"),
        ("assistant", "ok"),
    ]
    assert "SECRET-INSTRUCTION" not in json.dumps(ui)
    assert any(r.role == "context" for r in await executor.log(SID))


async def test_the_stream_marks_rows_with_context_row_chunks_only(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await start_session(executor, loopback)
    await executor.add_context(SID, [hs.instruction("Be brief.")])
    loopback.script(text("ok"))
    chunks = [ch async for ch in executor.run(agent_for(loopback), SID, "next")]
    rows = [ch for ch in chunks if isinstance(ch, c.ContextRowChunk)]
    assert len(rows) == 1 and rows[0].row.content == "Be brief."
    deltas = "".join(ch.delta for ch in chunks if isinstance(ch, c.TextDelta))
    assert "Be brief" not in deltas


async def test_a_reopened_sqlite_store_has_every_row(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    path = str(tmp_path / "reopen.db")
    first = hs.Executor(store=hs.SQLiteStore(path))
    loopback.script(text("hello"), text("again"))
    await first.run(agent_for(loopback), SID, "hi").consume()
    await first.add_context(SID, [hs.instruction("Answer in French.")], key="k1")
    await first.run(agent_for(loopback), SID, "next").consume()
    await first.add_context(SID, [hs.notice("queued, not yet delivered")])
    log_before = await first.log(SID)
    await first.store.close()

    second = hs.Executor(store=hs.SQLiteStore(path))
    assert await second.log(SID) == log_before
    assert [r.content for r in await second.context_rows(SID)] == ["Answer in French."]
    assert [e.items[0]["content"] for e in await pending_context(second.store, SID)] == [
        "queued, not yet delivered"
    ]
    assert await second.add_context(SID, [hs.instruction("Answer in French.")], key="k1") == 0
    await second.store.close()


async def test_a_second_run_of_a_running_session_is_refused(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    gate = asyncio.Event()

    async def slow(input: CityInput) -> str:
        await gate.wait()
        return "ok"

    agent = agent_for(loopback, [hs.tool(name="slow", input_schema=CityInput, execute=slow)])
    loopback.script(tool_calls(("slow", {"city": "x"})), text("done"))
    first = asyncio.create_task(executor.run(agent, SID, "go").consume())
    while (await executor.store.get_session(SID)) is None or (
        await executor.session(SID)
    ).status != "running":
        await asyncio.sleep(0.01)
    second = executor.run(agent, SID, "again")
    with pytest.raises(hs.errors.SessionBusyError):
        await second.text()
    gate.set()
    await first
    assert (await executor.session(SID)).status == "idle"
    assert [
        m["content"]
        for m in (r.payload for r in await executor.log(SID))
        if m.get("role") == "user"
    ] == ["go"]
