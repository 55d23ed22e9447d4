"""The step_context hook and memory auto-inject."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from tests._store import create_session
from tests.loopback import LoopbackServer, text, tool_calls

SID = "hooked-1"


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="hooked",
        system="System.",
        model="openai/loopback",
        tools=[hs.tool(name="noop", input_schema=_Q, execute=lambda i: "ok")],
        settings={"api_base": loopback.api_base, "api_key": "k"},
        **kw,
    )


from pydantic import BaseModel  # noqa: E402


class _Q(BaseModel):
    q: str


async def test_the_cursor_round_trips_through_the_log(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    seen: list[Any] = []
    feed = [{"id": 1, "text": "Ticket 1 opened"}, {"id": 2, "text": "Ticket 1 escalated"}]

    async def step_context(req: hs.StepContextRequest) -> dict[str, Any] | None:
        seen.append(req.cursor)
        since = req.cursor or 0
        new = [u for u in feed if u["id"] > since]
        if not new:
            return None
        return {"items": [hs.notice(u["text"]) for u in new], "cursor": new[-1]["id"]}

    a = agent(loopback, step_context=step_context)
    loopback.script(tool_calls(("noop", {"q": "x"})), text("ok"))
    await executor.run(a, SID, "hi").consume()
    feed.append({"id": 3, "text": "Ticket 1 closed"})
    loopback.script(text("ok"))
    await executor.run(a, SID, "again").consume()
    assert seen == [None, 2, 2]
    rows = await executor.context_rows(SID)
    assert [(r.content, r.source, r.cursor) for r in rows] == [
        ("Ticket 1 opened", "hook", 2),
        ("Ticket 1 escalated", "hook", 2),
        ("Ticket 1 closed", "hook", 3),
    ]
    # Hook rows take the system form.
    assert loopback.bodies()[0]["messages"][-1] == {
        "role": "system",
        "content": '<context kind="notice" source="hook">\nTicket 1 escalated\n</context>',
    }


async def test_hook_rows_commit_in_the_same_transaction_as_the_queue(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    await create_session(executor.store, SID, agent_name="hooked")
    await executor.add_context(SID, [hs.instruction("from the app")])
    store = executor.store
    measured: list[tuple[list[str], int]] = []
    original = store.write_turn

    async def counting(session_id: str, write: Any) -> Any:
        before = store.write_transactions
        result = await original(session_id, write)
        if write.deliver_queue:  # a context pass
            rows = [r.payload["source"] for r in result.records if r.role == "context"]
            measured.append((rows, store.write_transactions - before))
        return result

    store.write_turn = counting  # type: ignore[method-assign]
    a = agent(
        loopback,
        step_context=lambda req: (
            {"items": [hs.notice("from the hook")], "cursor": 1} if req.cursor is None else None
        ),
    )
    loopback.script(text("ok"))
    chunks = [ch async for ch in executor.run(a, SID, None)]
    rows = [ch.row for ch in chunks if isinstance(ch, c.ContextRowChunk)]
    assert [(r.content, r.source) for r in rows] == [
        ("from the app", "app"),
        ("from the hook", "hook"),
    ]
    assert measured == [(["app", "hook"], 1)]


@pytest.mark.parametrize(
    ("hook", "reason"),
    [
        pytest.param("raise", "error", id="raises"),
        pytest.param("slow", "timeout", id="times-out"),
        pytest.param("junk", "invalid", id="returns-junk"),
        pytest.param("bad-item", "invalid", id="invalid-item"),
    ],
)
async def test_a_failing_hook_is_skipped_and_the_run_goes_on(
    executor: hs.Executor,
    loopback: LoopbackServer,
    caplog: pytest.LogCaptureFixture,
    hook: str,
    reason: str,
) -> None:
    cancelled = asyncio.Event()

    async def step_context(req: hs.StepContextRequest) -> Any:
        if req.cursor is None:
            return {"items": [hs.notice("first batch")], "cursor": "c1"}
        if hook == "raise":
            raise RuntimeError("feed down")
        if hook == "slow":
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.set()
                raise
        if hook == "junk":
            return {"rows": 1}
        return {"items": [{"kind": "nonsense"}], "cursor": "c2"}

    a = agent(
        loopback, step_context=step_context, step_context_limits=hs.StepContextLimits(timeout=0.2)
    )
    loopback.script(tool_calls(("noop", {"q": "x"})), text("still answered"))
    with caplog.at_level(logging.WARNING, logger="helix_stream.context"):
        chunks = [ch async for ch in executor.run(a, SID, "hi")]
    skipped = [ch for ch in chunks if isinstance(ch, c.ContextSkipped)]
    assert [(s.reason, s.source) for s in skipped] == [(reason, "hook")]
    assert [r.content for r in await executor.context_rows(SID)] == ["first batch"]
    assert (await executor.context_rows(SID))[-1].cursor == "c1"  # the cursor did not move
    assert "".join(ch.delta for ch in chunks if isinstance(ch, c.TextDelta)) == "still answered"
    records = [r for r in caplog.records if getattr(r, "event", None) == "core.context.skipped"]
    assert len(records) == 1 and records[0].session_id == SID and records[0].reason == reason  # type: ignore[attr-defined]
    if hook == "slow":
        assert cancelled.is_set()


async def test_an_oversized_batch_keeps_what_fits_then_one_notice(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    calls: list[Any] = []

    def step_context(req: hs.StepContextRequest) -> Any:
        calls.append(req.cursor)
        if req.cursor is None:
            return {
                "items": [hs.notice(f"{i}:" + "x" * 300) for i in range(10)],
                "cursor": "after-10",
            }
        return None

    a = agent(
        loopback,
        step_context=step_context,
        step_context_limits=hs.StepContextLimits(max_bytes=1200),
    )
    loopback.script(tool_calls(("noop", {"q": "x"})), text("ok"))
    await executor.run(a, SID, "hi").consume()
    rows = await executor.context_rows(SID)
    assert [r.content.split(":")[0] for r in rows[:-1]] == ["0", "1"]  # in order
    assert (
        rows[-1].content
        == "8 of 10 context items from the step_context hook were left out: the batch was over its 1200-byte limit."
    )
    assert {r.cursor for r in rows} == {"after-10"}
    # The whole batch, the notice and the cursor included, keeps to max_bytes.
    from helix_stream.context import item_size

    batch = [{"kind": r.kind, "content": r.content, "source": "hook"} for r in rows]
    assert item_size({"items": batch, "cursor": "after-10"}) <= 1200
    assert calls == [None, "after-10"]  # the cursor advanced


async def test_memory_is_recalled_once_per_id(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    recalled: list[str] = []

    def recall(session_id: str, last_user: str) -> list[dict[str, str]]:
        recalled.append(last_user)
        return [{"id": "m1", "content": "Likes tea."}, {"id": "m2", "content": "Lives in Oslo."}]

    a = agent(loopback, memory=recall)
    loopback.script(tool_calls(("noop", {"q": "x"})), text("ok"))
    await executor.run(a, SID, "hello").consume()
    assert recalled == ["hello", "hello"]
    [row] = await executor.context_rows(SID)
    assert (row.kind, row.source, [m["id"] for m in row.memories or []]) == (
        "memory",
        "memory",
        ["m1", "m2"],
    )
    assert loopback.bodies()[0]["messages"][-1] == {
        "role": "user",
        "content": '<context kind="memory" source="memory">\n- Likes tea.\n- Lives in Oslo.\n</context>',
    }


async def test_a_recall_too_large_commits_an_empty_memory_row(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    a = agent(loopback, memory=lambda sid, msg: [{"id": "big", "content": "x" * 40_000}])
    loopback.script(tool_calls(("noop", {"q": "x"})), text("ok"))
    chunks = [ch async for ch in executor.run(a, SID, "hello")]
    assert [(s.reason, s.source) for s in chunks if isinstance(s, c.ContextSkipped)] == [
        ("too_large", "memory")
    ]
    [row] = await executor.context_rows(SID)
    assert row.kind == "memory" and row.memories == []
