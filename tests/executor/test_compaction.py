"""Compaction on every store (memory, SQLite, PostgreSQL): the summary row is appended and a
restarted executor renders its epoch; a summarizer that fails or times out writes nothing;
a session over the provider's limit then gets the provider's typed error, its log intact."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.context._summary import DEFAULT_SUMMARY_INSTRUCTIONS
from helix_stream.testing import FunctionModel
from tests.executor._util import snapshot
from tests.providers._read import strip_markers

SID = "compact-me"
MARK = DEFAULT_SUMMARY_INSTRUCTIONS.split(".")[0]
FIRST = "My first question, about the blue kettle."


def is_summarizer(request: dict[str, Any]) -> bool:
    return MARK in json.dumps(request["messages"][-1])


def model(summarizer: dict[str, Any], *, wire: str = "openai") -> FunctionModel:
    """Answers each turn at length; the summarizer call with ``summarizer``."""

    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if is_summarizer(request):
            return summarizer
        return {"text": "A long answer. " * 40}

    return FunctionModel(reply, wire=wire)  # type: ignore[arg-type]


def agent(llm: FunctionModel, **options: Any) -> hs.Agent:
    options.setdefault("compaction", hs.Compaction(trigger_tokens=900, keep_last_turns=1))
    return hs.Agent(name="compactor", model=llm, system="You are brief.", max_retries=0, **options)


async def turns(executor: hs.Executor, a: hs.Agent, count: int, start: int = 0) -> list[Any]:
    chunks: list[Any] = []
    for turn in range(start, start + count):
        text = FIRST if turn == 0 else f"Question {turn}. " + "and more " * 20
        result = executor.run(a, SID, text)
        async for chunk in result:
            chunks.append(chunk)
        assert result.error is None, result.error
    return chunks


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_the_summary_row_is_appended_and_survives_a_restart(
    store: hs.Store, wire: str
) -> None:
    llm = model({"text": "SUMMARY of the kettle talk.", "usage": {"input_tokens": 777}}, wire=wire)
    executor = hs.Executor(store=store)
    chunks = await turns(executor, agent(llm), 6)
    steps = [c.step for c in chunks if c.type == "finish-step"]
    compacted = [s for s in steps if s.compaction is not None]
    assert compacted and all(s.compaction.summary_seq for s in compacted)
    # The summarizer's usage is its own, beside the step's, and in the run's total.
    assert compacted[0].compaction.usage.input_tokens == 777
    assert compacted[0].usage.input_tokens != 777
    finish = [c for c in chunks if c.type == "finish"]
    total = sum(
        s.usage.input_tokens + (s.compaction.usage.input_tokens if s.compaction else 0)
        for s in steps
    )
    assert sum(f.usage.input_tokens for f in finish) == total
    log = await store.read_log(SID)
    summaries = [r for r in log if r.role == "context" and r.payload["kind"] == "summary"]
    assert [r.seq for r in summaries] == [s.compaction.summary_seq for s in compacted]
    assert sum(r.role == "user" for r in log) == 6  # nothing truncated
    rows = await executor.context_rows(SID)
    assert [r.kind for r in rows] == ["summary"] * len(summaries)
    ui = await executor.ui_messages(SID)
    assert len(ui) == 12 and FIRST in json.dumps(ui[0])  # GET .../messages: the whole talk
    before = len(llm.requests)
    # A new executor on the same store renders the epoch: the summary, then the tail.
    again = hs.Executor(store=store)
    await turns(again, agent(llm, compaction=None), 1, start=6)
    request = llm.requests[before]
    text = json.dumps(request["messages"])
    assert FIRST not in text and "SUMMARY of the kettle talk." in text
    # Markers aside (they move forward), the last request before is a prefix of it.
    last_before = strip_markers(llm.requests[before - 1]["messages"])
    assert strip_markers(request["messages"])[: len(last_before)] == last_before


async def test_a_failed_summarizer_writes_nothing_and_the_turn_goes_on(
    store: hs.Store, caplog: pytest.LogCaptureFixture
) -> None:
    llm = model({"error": 500})
    executor = hs.Executor(store=store)
    a = agent(llm)
    caplog.set_level(logging.WARNING, logger="helix_stream.context")
    for turn in range(10):  # until a request passes the trigger
        before = await store.read_log(SID) if turn else []
        chunks = await turns(executor, a, 1, start=turn)
        if any(is_summarizer(r) for r in llm.requests):
            break
    else:
        pytest.fail("the trigger was never reached")
    skipped = [c for c in chunks if c.type == "context_skipped"]
    assert [(c.reason, c.source) for c in skipped] == [("compaction_failed", "compaction")]
    after = await store.read_log(SID)
    assert after[: len(before)] == before
    assert [r.role for r in after[len(before) :]] == ["user", "assistant"]  # the turn, no row
    assert any(
        getattr(r, "event", None) == "core.context.compaction_failed" for r in caplog.records
    )
    # The model call went out uncompacted: the first question is still in it.
    assert FIRST in json.dumps(llm.requests[-1]["messages"])


async def test_a_summarizer_that_times_out_writes_nothing(store: hs.Store) -> None:
    llm = model({"text": "too late", "stall": 5.0})
    executor = hs.Executor(store=store)
    a = agent(llm, timeout=hs.Timeout(first_chunk=0.5))
    chunks = await turns(executor, a, 7)
    steps = [c.step for c in chunks if c.type == "finish-step" and c.step.compaction]
    assert steps and all(s.compaction.summary_seq is None for s in steps)
    assert "first_chunk" in (steps[0].compaction.error or "")
    log = await store.read_log(SID)
    assert all(r.payload.get("kind") != "summary" for r in log)


async def test_over_the_providers_limit_the_turn_gets_its_typed_error(store: hs.Store) -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if is_summarizer(request):
            return {"error": 500}
        if len(json.dumps(request["messages"])) > 6_000:  # the provider's window
            return {"error": 400}
        return {"text": "A long answer. " * 40}

    llm = FunctionModel(reply)
    executor = hs.Executor(store=store)
    a = agent(llm)
    for turn in range(12):
        before = await snapshot(store, SID) if turn else None
        result = executor.run(a, SID, f"Question {turn}. " + "and more " * 20)
        await result.consume()
        if result.error is not None:
            break
    else:
        pytest.fail("the provider never refused")
    assert isinstance(result.error, hs.HelixError)
    assert before is not None
    log = await store.read_log(SID)
    assert all(r.payload.get("kind") != "summary" for r in log)
    assert log[: len(before[1])] == before[1]  # earlier records untouched
    session = await store.get_session(SID)
    assert session is not None and session.status != "running"


def test_bad_compaction_settings_are_refused() -> None:
    with pytest.raises(hs.InvalidRequestError, match="trigger_tokens"):
        hs.Compaction(trigger_tokens=0)
    with pytest.raises(hs.InvalidRequestError, match="keep_last_turns"):
        hs.Compaction(trigger_tokens=10, keep_last_turns=-1)
    with pytest.raises(hs.InvalidRequestError, match="compaction"):
        hs.Agent(name="x", compaction=60_000)  # type: ignore[arg-type]


async def test_the_summarizer_may_be_another_model(store: hs.Store) -> None:
    llm = model({"text": "SUMMARY by the small model."})
    executor = hs.Executor(store=store)
    settings = hs.Compaction(trigger_tokens=900, keep_last_turns=1, model="openai/small-one")
    chunks = await turns(executor, agent(llm, compaction=settings), 6)
    summarizers = [r for r in llm.requests if is_summarizer(r)]
    assert summarizers and {r["model"] for r in summarizers} == {"small-one"}
    assert {r["model"] for r in llm.requests if not is_summarizer(r)} == {"gpt-4o-mini"}
    steps = [c.step for c in chunks if c.type == "finish-step" and c.step.compaction]
    assert {s.compaction.model for s in steps} == {"openai/small-one"}


async def test_an_app_cannot_add_a_summary_row(store: hs.Store) -> None:
    llm = model({"text": "SUMMARY"})
    executor = hs.Executor(store=store)
    await turns(executor, agent(llm), 1)
    before = await snapshot(store, SID)
    with pytest.raises(hs.ContextValidationError):
        await executor.add_context(SID, [{"kind": "summary", "content": "forged"}])
    assert await snapshot(store, SID) == before
