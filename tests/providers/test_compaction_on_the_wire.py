"""Compaction that appends, on the bytes the loopback Anthropic and OpenAI servers receive.

A session with ``hs.Compaction`` (a small trigger, so that a dozen turns compact it twice) runs
through ``Executor.run``, litellm and real HTTP. Its requests split into epochs at each
summarizer call: each request of an epoch is a prefix of the next; the summarizer's request
is the live request with the summarizing row appended; the rows in force before the summary
(an instruction, a tool switched off) still act after it; a branch from before the summary
sees the whole history again; a summarizer that answers nothing leaves the log as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models._family import Family
from tests.providers._read import assert_prefix_chain, envelopes, prefix_form
from tests.providers._summarizing import MARK, Summarizing, SummarizingAnthropic, SummarizingOpenAI
from tests.providers._wire import Say

SID = "compacted"
FIRST = "Where is my first order, the one with the red bike?"
INSTRUCTION = "Answer in French."
TURNS = 12


class Query(BaseModel):
    query: str


@pytest.fixture(params=["anthropic", "openai"])
def wire(request: pytest.FixtureRequest) -> Iterator[tuple[Family, Summarizing, dict[str, Any]]]:
    family: Family = request.param
    server: Any
    if family == "anthropic":
        server = SummarizingAnthropic().start()
        llm = server.llm()
    else:
        server = SummarizingOpenAI().start()
        llm = server.llm("openai/gpt-4o")
    try:
        yield family, server, llm
    finally:
        server.stop()


def agent_for(llm: dict[str, Any], ran: list[str], trigger: int = 1_500) -> hs.Agent:
    async def lookup(input: Query, ctx: hs.ToolContext) -> dict[str, Any]:
        ran.append("lookup")
        return {"query": input.query, "found": "order o-1, a red bike, shipped. " * 12}

    async def forbidden(input: Query, ctx: hs.ToolContext) -> str:
        ran.append("forbidden")
        return "should never run"

    return hs.Agent(
        name="compacting",
        system="You are the support assistant.",
        model=llm["model"],
        tools=[
            hs.tool(name="lookup", description="Look up", input_schema=Query, execute=lookup),
            hs.tool(name="forbidden", description="No", input_schema=Query, execute=forbidden),
        ],
        settings={k: v for k, v in llm.items() if k != "model"},
        compaction=hs.Compaction(trigger_tokens=trigger, keep_last_turns=1),
    )


async def run_turns(
    executor: hs.Executor, agent: hs.Agent, server: Summarizing, turns: range
) -> None:
    """Every turn: a tool round trip and an answer; in the session's last turn (after the
    compactions), the model also tries the switched-off tool."""
    for turn in turns:
        calls = [("lookup", {"query": f"order {turn}"})]
        if turn == TURNS - 1:
            calls.append(("forbidden", {"query": "x"}))
        server.turns.extend([Say(calls=calls), Say(text=f"Réponse {turn}. " + "blah " * 60)])
        text = FIRST if turn == 0 else f"Question {turn}: and the next order? " + "please " * 20
        result = executor.run(agent, SID, text)
        await result.consume()
        assert result.error is None, result.error


def epochs(bodies: list[dict[str, Any]]) -> tuple[list[list[dict[str, Any]]], list[int]]:
    """The requests split into epochs at each summarizer call, and the summarizers' indexes."""
    out: list[list[dict[str, Any]]] = [[]]
    summarizers = []
    for index, body in enumerate(bodies):
        if MARK in json.dumps(body["messages"][-1]):
            summarizers.append(index)
            out.append([])
        else:
            out[-1].append(body)
    return out, summarizers


def has_text(body: dict[str, Any], text: str) -> bool:
    return text in json.dumps(body["messages"], ensure_ascii=False)


async def test_epochs_are_prefix_chains_and_the_summarizer_shares_the_live_prefix(
    wire: tuple[Family, Summarizing, dict[str, Any]],
) -> None:
    family, server, llm = wire
    executor = hs.Executor(store=hs.MemoryStore())
    ran: list[str] = []
    agent = agent_for(llm, ran)
    await run_turns(executor, agent, server, range(1))
    await executor.add_context(SID, [hs.instruction(INSTRUCTION), hs.disable_tools(["forbidden"])])
    await run_turns(executor, agent, server, range(1, TURNS))
    bodies = [r.json() for r in server.requests]  # type: ignore[attr-defined]
    chains, summarizers = epochs(bodies)
    assert len(summarizers) >= 2, "the session was not compacted twice"
    assert summarizers == server.summarizer_calls
    for chain in chains:
        assert len(chain) >= 2
        assert_prefix_chain(family, chain)  # each request of an epoch is a prefix of the next
    for index in summarizers:
        live, summarizer = bodies[index - 1], bodies[index]
        # The summarizer's request extends the last request sent: same head (system, tools,
        # settings), the same blocks, then what came since and the summarizing row.
        head, blocks = prefix_form(family, live)
        s_head, s_blocks = prefix_form(family, summarizer)
        assert s_head == head
        assert s_blocks[: len(blocks)] == blocks and len(s_blocks) > len(blocks)
        after = bodies[index + 1]
        assert prefix_form(family, after)[0] == head  # the same system and tools after it
    # After the summary: the first user message is gone from the requests, the rows in force
    # come first (the instruction and the tool switch), then the summary.
    last = chains[-1][-1]
    assert not has_text(last, FIRST) and has_text(bodies[0], FIRST)
    kinds = [text.split('"')[1] for _, text in envelopes(last)]
    assert kinds[:3] == ["instruction", "tools", "summary"]
    assert INSTRUCTION in envelopes(last)[0][1]
    assert "SUMMARY:" in envelopes(last)[2][1]
    assert ran.count("forbidden") == 0 and ran.count("lookup") == TURNS  # the gate still acts
    if isinstance(server, SummarizingAnthropic):
        # The simulated cache: each summarizer call reads the whole request before it.
        usage = server.usage
        for index in summarizers:
            assert usage[index].cache_read_input_tokens == usage[index - 1].total
    # The log was never rewritten: every message is still there, and the UI shows them all.
    log = await executor.store.read_log(SID)
    assert sum(r.role == "user" for r in log) == TURNS
    summaries = [r for r in log if r.role == "context" and r.payload["kind"] == "summary"]
    assert len(summaries) == len(summarizers)
    ui = await executor.ui_messages(SID)
    assert len(ui) == 2 * TURNS and FIRST in json.dumps(ui[0])


async def test_a_branch_from_before_the_summary_sees_the_whole_history(
    wire: tuple[Family, Summarizing, dict[str, Any]],
) -> None:
    _, server, llm = wire
    executor = hs.Executor(store=hs.MemoryStore())
    agent = agent_for(llm, [])
    await run_turns(executor, agent, server, range(8))
    log = await executor.store.read_log(SID)
    first_summary = next(r.seq for r in log if r.payload.get("kind") == "summary")
    before = [c for c in await executor.checkpoints(SID) if c.log_seq < first_summary][-1]
    branch = await executor.branch(SID, checkpoint_id=before.id, new_session_id="b")
    server.turns.append(Say(text="Back in time."))
    sent = len(server.requests)  # type: ignore[attr-defined]
    big = agent_for(llm, [], trigger=1_000_000)  # no compaction in the branch's turn
    result = executor.run(big, branch, "Tell me again about my first order")
    await result.consume()
    assert result.error is None
    body = server.requests[sent].json()  # type: ignore[attr-defined]
    assert has_text(body, FIRST)
    assert [t for _, t in envelopes(body) if 'kind="summary"' in t] == []
    # The source session, compacted, still shows its epoch.
    await executor.retry(SID, checkpoint_id=before.id)  # a rewind: the summary row goes
    log_after = await executor.store.read_log(SID)
    assert all(r.payload.get("kind") != "summary" for r in log_after)
    server.turns.append(Say(text="Again."))
    sent = len(server.requests)  # type: ignore[attr-defined]
    result = executor.run(big, SID)
    await result.consume()
    assert result.error is None
    assert has_text(server.requests[sent].json(), FIRST)  # type: ignore[attr-defined]


async def test_a_summarizer_with_no_text_leaves_the_log_as_it_was(
    wire: tuple[Family, Summarizing, dict[str, Any]],
) -> None:
    family, server, llm = wire
    executor = hs.Executor(store=hs.MemoryStore())
    agent = agent_for(llm, [])
    server.summary = Say(text="")  # the summarizer answers nothing: the compaction fails
    chunks: list[Any] = []
    for turn in range(6):
        server.turns.extend([Say(calls=[("lookup", {"query": "q"})]), Say(text="x " * 80)])
        result = executor.run(agent, SID, f"Question {turn} " + "please " * 20)
        async for chunk in result:
            chunks.append(chunk)
        assert result.error is None
    assert server.summarizer_calls, "the trigger was never reached"
    skipped = [c for c in chunks if c.type == "context_skipped"]
    assert skipped and {(c.reason, c.source) for c in skipped} == {
        ("compaction_failed", "compaction")
    }
    log = await executor.store.read_log(SID)
    assert all(r.payload.get("kind") != "summary" for r in log)
    bodies = [r.json() for r in server.requests]  # type: ignore[attr-defined]
    plain = [b for i, b in enumerate(bodies) if i not in server.summarizer_calls]
    assert_prefix_chain(family, plain)  # uncompacted: one chain, the whole history
    steps = [c.step for c in chunks if c.type == "finish-step" and c.step.compaction]
    assert steps and all(s.compaction.error and s.compaction.summary_seq is None for s in steps)
