"""How much of the prior context a 20-turn session reads from a (simulated) Anthropic cache.

Run: ``.venv/bin/python bench/bench_prompt_cache.py`` (or ``make bench``). Budget: at least
95% with helix's defaults.

A loopback Anthropic Messages server (``tests/providers/anthropic_server.py``) simulates
Anthropic's prompt cache: a request reads the longest prefix, ending at a block, that an
earlier request marked with ``cache_control`` (looking back at most 20 blocks from one of its
own markers, as Anthropic does); what lies between that and its last marker is written;
the figures come back in the stream's usage (``cache_read_input_tokens``,
``cache_creation_input_tokens``). Sizes are **rough tokens**: the UTF-8 bytes of each block's
JSON divided by 4.

The same session runs three ways, through ``Executor.run`` (the real context pass and loop),
litellm and HTTP: 20 user turns, every other one with a tool round trip, and a new app
instruction before turns 5, 10 and 15:

* **helix** — the instruction is a context row, ``prompt_cache="auto"`` (the default);
* **helix, prompt_cache=False** — the same rows, no cache markers;
* **helix, skills on** — the same, for an agent with two skills: their index is part of the
  fixed system prompt, and the model loads one with ``load_skill`` in turns 3 and 11;
* **helix, MCP server changing** — the same, for an agent that also owns an MCP server (the
  tests' stdio server, ``tests/mcp/server_app.py``) whose tool list changes before turns 7 and
  13: the session keeps offering what the server listed at its first turn, and the model
  calls one of its tools every third turn;
* **MCP tools as listed each turn** — the same server, its tools as it lists them before each
  turn (what peers offer): the request changes from the tool list on whenever the list does;
* **system prompt** — the instruction is appended to the system prompt, as dynamic
  instructions do in the AI SDK and pydantic-ai; it gets the same markers as helix's
  default, so the only difference is where the instruction goes.

"Prior context" of a request is everything the previous request sent; the share is how much
of it the request read from the cache, over the whole session.

Then a **300-turn session** that grows past a 100,000-token window, compacted with
``hs.Compaction(trigger_tokens=60_000)`` and, side by side, the way peers compact (a separate
summarizer request whose summary replaces the history in place), for tool results of ~1,000
and ~2,500 tokens: the budgets are no request over the window, at least 90% of prior context
and of each summarizer call's input read from the cache, and billed input cost at most 0.85x
the peers' (``bench/_compaction_bench.py``). ``--short`` skips it.
"""

from __future__ import annotations

import asyncio
import itertools
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (puts the repo on sys.path)
import _compaction_bench
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models._litellm import load_litellm
from tests.providers._wire import Say
from tests.providers.anthropic_server import AnthropicServer, CacheUsage

TURNS = 20
INSTRUCTION_TURNS = {
    5: "Answer in French.",
    10: "Keep answers under 50 words.",
    15: "Cite the ticket id.",
}
BUDGET = 0.95
SID = "bench-session"
SYSTEM = (
    "You are the support assistant of a company that sells bicycles. "
    "Be precise, friendly and short; use the tools to look things up. " * 20
)


SKILLS = [
    hs.Skill(
        "returns",
        "How returns and refunds work. Load it before promising a refund.",
        "# Returns\n" + "A bike may be returned within 30 days, unridden, with its receipt. " * 12,
    ),
    hs.Skill(
        "repairs",
        "How to book a repair. Load it before booking one.",
        "# Repairs\n" + "Repairs are booked at the nearest shop; a quote comes first. " * 12,
    ),
]
SKILL_TURNS = {3: "returns", 11: "repairs"}
MCP_APP = Path(__file__).resolve().parents[1] / "tests" / "mcp" / "server_app.py"
# What the MCP server hides before a turn: it adds one tool and drops two along the session.
MCP_CHANGES = {1: "added_later", 7: "chart", 13: "chart\necho"}


class Query(BaseModel):
    query: str


def make_tools() -> list[hs.Tool]:
    async def search_orders(input: Query, ctx: hs.ToolContext) -> dict[str, Any]:
        return {
            "query": input.query,
            "orders": [{"id": f"o-{i}", "item": "bike " * 20} for i in range(8)],
        }

    async def search_manual(input: Query, ctx: hs.ToolContext) -> dict[str, Any]:
        return {"query": input.query, "sections": ["Adjust the saddle height. " * 10] * 4}

    return [
        hs.tool(
            name="search_orders",
            description="Search the orders",
            input_schema=Query,
            execute=search_orders,
        ),
        hs.tool(
            name="search_manual",
            description="Search the manual",
            input_schema=Query,
            execute=search_manual,
        ),
    ]


@dataclass
class Outcome:
    name: str
    usage: list[CacheUsage]
    last_turn_usage: Any  # result.usage of the last turn
    last_turn_requests: int

    def prior_share(self) -> float:
        """Share of the previous request's input (prior context) read from the cache."""
        prior = sum(u.total for u in self.usage[:-1])
        read = sum(
            min(u.cache_read_input_tokens, p.total) for p, u in itertools.pairwise(self.usage)
        )
        return read / prior

    def input_share(self) -> float:
        """Share of all input tokens read from the cache."""
        return sum(u.cache_read_input_tokens for u in self.usage) / sum(u.total for u in self.usage)


def script(server: AnthropicServer, *, skills: bool = False, mcp: bool = False) -> None:
    for turn in range(1, TURNS + 1):
        if skills and turn in SKILL_TURNS:
            server.script(Say(calls=[("load_skill", {"name": SKILL_TURNS[turn]})]))
        if mcp and turn % 3 == 0:
            server.script(Say(calls=[("demo__forecast", {"city": f"City {turn}"})]))
        if turn % 2 == 0:
            tool = "search_orders" if turn % 4 == 0 else "search_manual"
            server.script(Say(calls=[(tool, {"query": f"question {turn}"})]))
        server.script(Say(text=f"Here is what I found for question {turn}. " * 4))


async def run(
    name: str,
    *,
    prompt_cache: Any = "auto",
    in_system: bool = False,
    skills: bool = False,
    mcp: str | None = None,
) -> Outcome:
    server = AnthropicServer().start()
    state = tempfile.TemporaryDirectory()
    executor = hs.Executor(store=hs.MemoryStore())
    try:
        script(server, skills=skills, mcp=mcp is not None)
        llm = server.llm()
        settings = {k: v for k, v in llm.items() if k != "model"}
        env = {"HELIX_MCP_STATE": state.name}
        demo = hs.MCPServer.stdio(sys.executable, [str(MCP_APP), "stdio"], env=env, name="demo")
        # "offer": the agent owns the server (the session's first offer, every turn);
        # "live": the tools the server lists before each turn, as peers offer them.
        owned = [demo] if mcp == "offer" else []

        async def agent(system: str) -> hs.Agent:
            live = await demo.tools() if mcp == "live" else []
            return hs.Agent(
                name="support",
                system=system,
                model=llm["model"],
                tools=[*make_tools(), *owned, *live],
                settings=settings,
                prompt_cache=prompt_cache,
                skills=SKILLS if skills else (),
            )

        system = SYSTEM
        instructions: list[str] = []
        last: Any = None
        before_last = 0
        for turn in range(1, TURNS + 1):
            if mcp is not None and turn in MCP_CHANGES:
                (Path(state.name) / "hidden").write_text(MCP_CHANGES[turn] + "\n")
            if turn in INSTRUCTION_TURNS:
                if in_system:
                    instructions.append(INSTRUCTION_TURNS[turn])
                    system = SYSTEM + "\n\nInstructions:\n" + "\n".join(instructions)
                else:
                    await executor.add_context(SID, [hs.instruction(INSTRUCTION_TURNS[turn])])
            before_last = len(server.usage)
            text = f"Question {turn}: where is my order and how do I adjust it?"
            last = executor.run(await agent(system), SID, text)
            await last.consume()
            if last.error is not None:
                raise last.error
            if mcp and turn % 3 == 0 and not (Path(state.name) / "calls").exists():
                raise AssertionError("the MCP tool was not called")
        return Outcome(name, list(server.usage), last.usage, len(server.usage) - before_last)
    finally:
        await executor.close()
        await demo.aclose()
        server.stop()
        state.cleanup()


async def main() -> int:
    load_litellm()
    outcomes = [
        await run("helix (context rows, prompt_cache='auto')"),
        await run("helix, prompt_cache=False", prompt_cache=False),
        await run("helix, skills on", skills=True),
        await run("helix, MCP server changing", mcp="offer"),
        await run("MCP tools as listed each turn", mcp="live"),
        await run("instruction in the system prompt", in_system=True),
    ]
    requests = len(outcomes[0].usage)
    print(
        f"\n{TURNS} turns, {requests} requests, instructions before turns {sorted(INSTRUCTION_TURNS)}"
    )
    print("rough tokens = UTF-8 bytes of each block's JSON / 4; simulated Anthropic cache\n")
    print(
        f"{'':44} {'prior context read':>18} {'all input read':>15} {'written':>9} {'uncached':>9}"
    )
    for o in outcomes:
        written = sum(u.cache_creation_input_tokens for u in o.usage)
        uncached = sum(u.input_tokens for u in o.usage)
        print(
            f"{o.name:44} {o.prior_share():>17.1%} {o.input_share():>14.1%} {written:>9} {uncached:>9}"
        )
    ok = outcomes[0].prior_share() >= BUDGET
    print(
        f"\nbudget: helix default >= {BUDGET:.0%} of prior context from cache: {'ok' if ok else 'MISSED'}"
    )
    skills_ok = outcomes[2].prior_share() >= BUDGET
    print(f"budget: helix with skills on >= {BUDGET:.0%}: {'ok' if skills_ok else 'MISSED'}")
    mcp_ok = outcomes[3].prior_share() >= BUDGET
    print(
        f"budget: helix with an MCP server changing >= {BUDGET:.0%}: {'ok' if mcp_ok else 'MISSED'}"
    )
    ok = ok and skills_ok and mcp_ok
    print("\nThe last turn's result.usage beside the server's figures for the same requests:")
    for o in outcomes:
        turn = o.usage[-o.last_turn_requests :]
        read = sum(u.cache_read_input_tokens for u in turn)
        written = sum(u.cache_creation_input_tokens for u in turn)
        print(
            f"  {o.name:44} result.usage.input_tokens={o.last_turn_usage.input_tokens}"
            f"  server: read {read} + written {written} + uncached {sum(u.input_tokens for u in turn)}"
        )
    print(
        "  (result.usage has no cached-token fields yet: they come with the usage work, issue 16;"
        " read and written above are where they belong.)"
    )
    if "--short" not in sys.argv:
        comparisons = [await _compaction_bench.compare(n) for n in (1_000, 2_500)]
        ok = _compaction_bench.report(comparisons) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
