"""Session budgets on every store: ``executor.usage`` totals kept with the session,
``Agent(session_limits=...)`` judged on them (at the turn's opening and before each call), a
run's ``usage_limits`` on an agent; refusals write nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from tests.executor._util import snapshot
from tests.loopback import LoopbackServer, text, tool_calls
from tests.store import _pg

SID = "budget-1"


class Q(BaseModel):
    q: str


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="budgeted",
        tools=[hs.tool(name="look", input_schema=Q, execute=lambda i: "found")],
        settings={"api_base": loopback.api_base, "api_key": "k"},
        # gpt-4o-mini: priced by litellm's cost map
        **{"max_retries": 0, "model": "openai/gpt-4o-mini", **kw},
    )


async def everything(store: hs.Store, session_id: str = SID) -> tuple[Any, ...]:
    """What the store holds for the session, its meta (where the totals are) included."""
    session = await store.get_session(session_id)
    return (await snapshot(store, session_id), session.meta if session else None)


def two_calls(loopback: LoopbackServer) -> None:
    loopback.replies.clear()
    loopback.script(
        tool_calls(("look", {"q": "a"}), usage=(100, 10)), text("Done.", usage=(150, 20))
    )


async def test_the_totals_add_every_call_of_every_turn(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    details = {"prompt_tokens_details": {"cached_tokens": 80}}
    loopback.script(
        tool_calls(("look", {"q": "a"}), usage=(100, 10)),
        text("Done.", usage=(150, 20), usage_details=details),
    )
    result = executor.run(agent(loopback), SID, "Look it up.")
    await result.text()
    totals = await executor.usage(SID)
    assert (totals.requests, totals.input_tokens, totals.output_tokens) == (2, 250, 30)
    assert (totals.cached_input_tokens, totals.uncached_input_tokens) == (80, 170)
    assert totals.total_tokens == 280
    assert totals.cost_usd == pytest.approx(result.usage.cost_usd)
    assert totals.cost_usd is not None and totals.cost_usd > 0
    loopback.script(text("Again.", usage=(300, 5)))
    await executor.run(agent(loopback), SID, "More.").text()
    more = await executor.usage(SID)
    assert (more.requests, more.input_tokens, more.output_tokens) == (3, 550, 35)


async def test_a_session_limit_reached_refuses_the_next_turn_and_writes_nothing(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    limited = agent(loopback, session_limits=hs.UsageLimits(requests=2))
    two_calls(loopback)
    await executor.run(limited, SID, "Look it up.").text()
    before = await everything(executor.store)
    with pytest.raises(hs.UsageLimitExceededError) as info:
        await executor.run(limited, SID, "And again.").text()
    assert (info.value.limit, info.value.scope) == ("requests", "session")
    assert "session_limits" in info.value.message
    assert len(loopback.requests) == 2  # nothing sent
    assert await everything(executor.store) == before
    # A raised limit lets the session go on.
    loopback.script(text("Sure.", usage=(10, 1)))
    raised = agent(loopback, session_limits=hs.UsageLimits(requests=3))
    assert await executor.run(raised, SID, "And again.").text() == "Sure."
    assert (await executor.usage(SID)).requests == 3


async def test_a_session_limit_stops_a_turn_before_the_call_that_would_cross_it(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    limited = agent(loopback, session_limits=hs.UsageLimits(output_tokens=10))
    two_calls(loopback)
    with pytest.raises(hs.UsageLimitExceededError) as info:
        await executor.run(limited, SID, "Look it up.").text()
    assert info.value.limit == "output_tokens"
    assert len(loopback.requests) == 1  # the first call reached 10: the second never went
    totals = await executor.usage(SID)
    assert (totals.requests, totals.output_tokens) == (1, 10)
    session = await executor.store.get_session(SID)
    assert session is not None and session.status == "failed"  # as any failed turn: usable
    loopback.replies.clear()
    loopback.script(text("Here.", usage=(10, 1)))
    raised = agent(loopback, session_limits=hs.UsageLimits(output_tokens=100))
    assert await executor.run(raised, SID, "Go on.").text() == "Here."


async def test_an_agents_usage_limits_apply_per_run(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    per_run = agent(loopback, usage_limits=hs.UsageLimits(requests=2))
    for turn in range(2):  # two runs of two calls each: the limit is each run's own
        two_calls(loopback)
        assert await executor.run(per_run, SID, f"Turn {turn}.").text() == "Done."
    assert (await executor.usage(SID)).requests == 4
    two_calls(loopback)
    with pytest.raises(hs.UsageLimitExceededError):
        # The run's own option wins over the agent's.
        await executor.run(per_run, SID, "Once.", usage_limits=hs.UsageLimits(requests=1)).text()
    assert len(loopback.requests) == 5


async def test_a_cost_limit_for_a_model_without_a_price_is_refused_at_entry(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(text("Done.", usage=(10, 1)))
    plain = agent(loopback, model="openai/loopback")
    await executor.run(plain, SID, "Hello.").text()
    before = await everything(executor.store)
    for limits in (
        {"session_limits": hs.UsageLimits(cost_usd=1.0)},
        {"usage_limits": hs.UsageLimits(cost_usd=1.0)},
    ):
        with pytest.raises(hs.FrameworkNotSupportedError, match="cost_usd"):
            await executor.run(
                agent(loopback, model="openai/loopback", **limits), SID, "Hi."
            ).text()
    assert await everything(executor.store) == before
    assert len(loopback.requests) == 1
    # A session whose spend includes an unpriced call cannot be held to a cost limit either.
    with pytest.raises(hs.FrameworkNotSupportedError, match="spend is unknown"):
        await executor.run(
            agent(loopback, session_limits=hs.UsageLimits(cost_usd=1.0)), SID, "Hi."
        ).text()
    assert await everything(executor.store) == before


async def test_the_usage_of_an_unknown_session_is_refused(executor: hs.Executor) -> None:
    before = await everything(executor.store, "nope")
    with pytest.raises(hs.SessionNotFoundError):
        await executor.usage("nope")
    assert await everything(executor.store, "nope") == before


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_session_limit_survives_a_restart(
    backend: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    """A new Executor over the same SQLite file (or PostgreSQL schema) reads the same totals
    and holds the session to the same limit."""
    if backend == "sqlite":
        path = str(tmp_path / "helix.db")

        def make() -> hs.Store:
            return hs.SQLiteStore(path)
    else:
        schema = _pg.new_schema()  # skips, with the reason, with no server

        def make() -> hs.Store:
            return _pg.make_store(schema)

    limited = agent(loopback, session_limits=hs.UsageLimits(requests=2))
    try:
        first = make()
        try:
            two_calls(loopback)
            await hs.Executor(store=first).run(limited, SID, "Look it up.").text()
            totals = await hs.Executor(store=first).usage(SID)
        finally:
            await first.close()
        second = make()
        try:
            restarted = hs.Executor(store=second)
            assert await restarted.usage(SID) == totals
            assert totals.requests == 2 and totals.cost_usd is not None
            before = await everything(second)
            with pytest.raises(hs.UsageLimitExceededError):
                await restarted.run(limited, SID, "Again.").text()
            assert await everything(second) == before
            assert len(loopback.requests) == 2
        finally:
            await second.close()
    finally:
        _pg.drop_schemas()


async def test_the_totals_count_what_was_spent_through_retries_and_branches(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    two_calls(loopback)
    await executor.run(agent(loopback), SID, "Look it up.").text()
    spent = await executor.usage(SID)
    assert spent.requests == 2
    await executor.retry(SID)  # the log is cut back; the money was spent all the same
    assert await executor.usage(SID) == spent
    branched = await executor.branch(SID)
    assert await executor.usage(branched) == spent
