"""An agent with skills on each provider family's wire format: the skill index is part of the
fixed system prompt, so every request (cache markers removed) is a prefix of the next across
turns, ``load_skill`` calls included; on Anthropic the cache markers are there too."""

from __future__ import annotations

import pytest

import helix_stream as hs
from tests.providers._read import assert_prefix_chain, strip_markers, texts
from tests.providers._wire import Say
from tests.providers.conftest import FAMILY_IDS, Provider

SKILLS = [
    hs.Skill("triage", "Sort a ticket by urgency. Load it for a new ticket.", "1. Read it."),
    hs.Skill(
        "refunds",
        "How refunds work. Load it before promising one.",
        "Refunds take 5 days.",
        files={"policy.md": "No refunds after 30 days.\n"},
    ),
]


def agent_for(provider: Provider) -> hs.Agent:
    settings = {k: v for k, v in provider.llm.items() if k != "model"}
    return hs.Agent(
        name="support",
        system="You are the support bot.",
        model=provider.llm["model"],
        skills=SKILLS,
        settings=settings,
        max_retries=0,
    )


@pytest.mark.parametrize("provider", FAMILY_IDS, indirect=True)
async def test_with_skills_the_prompt_stays_a_prefix_across_turns(provider: Provider) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    agent = agent_for(provider)
    provider.server.script(
        Say(text="Hello."),
        Say(calls=[("load_skill", {"name": "refunds"})]),
        Say(text="Refunds take 5 days."),
        Say(calls=[("load_skill", {"name": "refunds", "path": "policy.md"})]),
        Say(text="Not after 30 days."),
        Say(text="Bye."),
    )
    for message in ("Hi", "Can I get a refund?", "After 40 days?", "Thanks"):
        result = executor.run(agent, "s", message)
        await result.consume()
        assert result.error is None
    bodies = provider.server.bodies()
    assert len(bodies) == 6
    assert_prefix_chain(provider.family, bodies)
    index = "- refunds: How refunds work. Load it before promising one.\n- triage: Sort"
    for body in bodies:
        systems = [t for role, t in texts(strip_markers(body)) if role == "system"]
        assert any(index in t for t in systems), systems
    sent = [t for _, t in texts(bodies[-1])]
    assert any("Refunds take 5 days." in t for t in sent)
    assert any("No refunds after 30 days." in t for t in sent)


@pytest.mark.parametrize("provider", ["anthropic"], indirect=True)
async def test_with_skills_anthropic_requests_carry_cache_markers(provider: Provider) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    provider.server.script(Say(calls=[("load_skill", {"name": "triage"})]), Say(text="a"))
    provider.server.script(Say(text="b"))
    await executor.run(agent_for(provider), "s", "one").consume()
    await executor.run(agent_for(provider), "s", "two").consume()
    bodies = provider.server.bodies()
    assert len(bodies) == 3 and all(body != strip_markers(body) for body in bodies)
    assert_prefix_chain(provider.family, bodies)
