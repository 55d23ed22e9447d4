"""The long-session half of ``bench_prompt_cache.py``: 300 turns, compacted two ways.

Each turn: a user message, a tool call whose result is ~``tool_tokens`` rough tokens, then an
answer of ~1,500. The session grows past a 100,000-token window; ``trigger_tokens=60_000``.

* **helix** — ``hs.Agent(compaction=hs.Compaction(trigger_tokens=60_000, keep_last_turns=2))``
  through ``Executor.run``: the summarizer call is the session's own next request plus a
  summarizing row, and the summary is appended as a row (README, "Compaction that appends").
* **peers' way** — the same loop and the same cache markers (``stream_text``, one model call
  at a time, the history kept by the bench): when the next request would pass the same
  trigger (the same litellm count), a separate summarizer request with its own system prompt
  and the conversation as a transcript is sent, and its summary **replaces the history in
  place** (then the same kept turns follow), as frameworks that compact do.

Both talk to the loopback Anthropic server's simulated cache; billed input is priced as
Anthropic prices it: uncached 1x, cache writes (5 minutes) 1.25x, cache reads 0.1x of the
base input price ($3 per million tokens, Claude Sonnet).
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

import helix_stream as hs
from helix_stream.models._litellm import count_tokens
from tests.providers._summarizing import SummarizingAnthropic
from tests.providers._wire import Say
from tests.providers.anthropic_server import AnthropicServer, CacheUsage

TURNS = 300
WINDOW = 100_000
TRIGGER = 60_000
KEEP = 2
ANSWER_TOKENS = 1_500
SUMMARY_TOKENS = 400
PRICE = 3.0 / 1_000_000  # $ per uncached input token (Claude Sonnet)
WRITE, READ = 1.25, 0.1
SYSTEM = "You are the support assistant of a bicycle shop. Use the tools to look things up. " * 8
PEER_SYSTEM = "You summarize conversations so that an assistant can carry on from the summary."
WORDS = (
    "order",
    "bike",
    "frame",
    "wheel",
    "saddle",
    "brake",
    "chain",
    "gear",
    "shipped",
    "warehouse",
    "customer",
    "refund",
    "repair",
    "invoice",
    "delivery",
    "address",
    "colour",
    "size",
    "model",
    "stock",
    "price",
    "discount",
    "warranty",
    "ticket",
    "status",
    "courier",
    "tracking",
    "Monday",
    "Tuesday",
    "Oslo",
    "Paris",
    "Berlin",
    "red",
    "blue",
    "green",
    "carbon",
    "aluminium",
    "steel",
)


class Query(BaseModel):
    query: str


def prose(tokens: int, seed: int) -> str:
    """About ``tokens`` rough tokens (bytes / 4) of varied text."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    while size < tokens * 4:
        word = rng.choice(WORDS) if rng.random() > 0.15 else str(rng.randint(10, 99_999))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def lookup_tool(tool_tokens: int) -> hs.Tool:
    counter = itertools.count()

    async def lookup(input: Query, ctx: hs.ToolContext) -> dict[str, Any]:
        return {"query": input.query, "found": prose(tool_tokens - 20, next(counter))}

    return hs.tool(name="lookup", description="Look orders up", input_schema=Query, execute=lookup)


def user_text(turn: int) -> str:
    return f"Question {turn}: what happened to order {1000 + turn}, and when will it arrive?"


@dataclass
class Session:
    """One session's requests as the server billed them."""

    name: str
    usage: list[CacheUsage]
    summarizers: list[int]  # indexes of the summarizer calls in ``usage``

    def prior_share(self) -> float:
        """Of each request's prior context (everything the request before it sent), how much
        it read from the cache, over the whole session (summarizer calls included)."""
        prior = sum(u.total for u in self.usage[:-1])
        read = sum(
            min(u.cache_read_input_tokens, p.total) for p, u in itertools.pairwise(self.usage)
        )
        return read / prior

    def summarizer_shares(self) -> list[float]:
        """Each summarizer call's input share read from the cache."""
        return [
            self.usage[i].cache_read_input_tokens / self.usage[i].total for i in self.summarizers
        ]

    def cost(self) -> float:
        """Billed input, in dollars."""
        return PRICE * sum(
            u.input_tokens
            + WRITE * u.cache_creation_input_tokens
            + READ * u.cache_read_input_tokens
            for u in self.usage
        )

    def largest(self) -> int:
        return max(u.total for u in self.usage)


async def helix_session(tool_tokens: int) -> Session:
    server = SummarizingAnthropic().start()
    server.summary = Say(text=prose(SUMMARY_TOKENS, -1))
    executor = hs.Executor(store=hs.MemoryStore())
    try:
        llm = server.llm()
        agent = hs.Agent(
            name="support",
            system=SYSTEM,
            model=llm["model"],
            tools=[lookup_tool(tool_tokens)],
            settings={k: v for k, v in llm.items() if k != "model"},
            compaction=hs.Compaction(trigger_tokens=TRIGGER, keep_last_turns=KEEP),
        )
        for turn in range(TURNS):
            server.turns.extend(
                [
                    Say(calls=[("lookup", {"query": f"order {1000 + turn}"})]),
                    Say(text=prose(ANSWER_TOKENS, turn)),
                ]
            )
            result = executor.run(agent, "long", user_text(turn))
            await result.consume()
            if result.error is not None:
                raise result.error
        return Session("helix: summary appended", list(server.usage), server.summarizer_calls)
    finally:
        await executor.close()
        server.stop()


class _Peer:
    """The peers' way, one model call at a time (module docstring)."""

    def __init__(self, server: AnthropicServer, tool_tokens: int) -> None:
        self.server = server
        self.llm = server.llm()
        self.tools = [lookup_tool(tool_tokens)]
        self.history: list[dict[str, Any]] = []
        self.turn_starts: list[int] = []  # index in history of each turn's user message
        self.summarizers: list[int] = []

    async def call(self, turn: int) -> None:
        request = {
            "model": self.llm["model"],
            "messages": [{"role": "system", "content": SYSTEM}, *self.history],
            "tools": [t.schema(None) for t in self.tools],
        }
        if count_tokens(request) > TRIGGER:
            await self.compact()
        result = hs.stream_text(
            **self.llm,
            system=SYSTEM,
            messages=list(self.history),
            tools=self.tools,
            stop_when=hs.step_count_is(1),
        )
        await result.consume()
        if result.error is not None:
            raise result.error
        self.history.extend(result.response_messages)

    async def compact(self) -> None:
        keep_from = self.turn_starts[max(0, len(self.turn_starts) - 1 - KEEP)]
        if keep_from == 0:
            return
        transcript = "\n\n".join(
            f"{m['role']}: {json.dumps(m.get('content') or m.get('tool_calls'))}"
            for m in self.history
        )
        self.summarizers.append(len(self.server.usage))
        # Answered before the turn's own scripted reply, which the call after it takes.
        self.server.replies.appendleft(Say(text=prose(SUMMARY_TOKENS, -1)))
        out = await hs.generate_text(
            **self.llm,
            system=PEER_SYSTEM,
            prompt=transcript + "\n\nSummarize the conversation above.",
            prompt_cache=False,
        )
        summary = {"role": "user", "content": f"Summary of the conversation so far:\n{out.text}"}
        self.history = [summary, *self.history[keep_from:]]
        shift = keep_from - 1
        self.turn_starts = [s - shift for s in self.turn_starts if s >= keep_from]


async def peer_session(tool_tokens: int) -> Session:
    server = AnthropicServer().start()
    peer = _Peer(server, tool_tokens)
    try:
        for turn in range(TURNS):
            peer.turn_starts.append(len(peer.history))
            peer.history.append({"role": "user", "content": user_text(turn)})
            server.script(Say(calls=[("lookup", {"query": f"order {1000 + turn}"})]))
            await peer.call(turn)
            server.script(Say(text=prose(ANSWER_TOKENS, turn)))
            await peer.call(turn)
        return Session("peers: summary replaces the history", list(server.usage), peer.summarizers)
    finally:
        server.stop()


@dataclass
class Comparison:
    tool_tokens: int
    helix: Session
    peer: Session

    @property
    def ratio(self) -> float:
        return self.helix.cost() / self.peer.cost()


async def compare(tool_tokens: int) -> Comparison:
    return Comparison(
        tool_tokens, await helix_session(tool_tokens), await peer_session(tool_tokens)
    )


def report(comparisons: list[Comparison]) -> bool:
    """Print the figures; whether the budgets hold (the first workload's ratio, all others)."""
    ok = True
    for c in comparisons:
        print(
            f"\n{TURNS} turns, tool results ~{c.tool_tokens:,} tokens, answers ~{ANSWER_TOKENS:,}, "
            f"trigger {TRIGGER:,}, window {WINDOW:,}, keep_last_turns={KEEP}"
        )
        print(
            f"  {'':40} {'requests':>8} {'compactions':>11} {'largest':>8} "
            f"{'prior read':>10} {'summarizer read (min)':>21} {'input cost':>10}"
        )
        for s in (c.helix, c.peer):
            shares = s.summarizer_shares()
            low = f"{min(shares):.1%}" if shares else "-"
            print(
                f"  {s.name:40} {len(s.usage):>8} {len(s.summarizers):>11} {s.largest():>8,} "
                f"{s.prior_share():>10.1%} {low:>21} {'$' + format(s.cost(), '.2f'):>10}"
            )
        print(f"  cost ratio helix / peers: {c.ratio:.2f}x")
        h = c.helix
        checks = {
            f"no request over the {WINDOW:,}-token window": h.largest() <= WINDOW,
            "compacted at least once": bool(h.summarizers),
            ">= 90% of prior context read from cache": h.prior_share() >= 0.90,
            ">= 90% of each summarizer call's input from cache": all(
                s >= 0.90 for s in h.summarizer_shares()
            ),
        }
        if c is comparisons[0]:
            checks["billed input cost <= 0.85x the peers' way"] = c.ratio <= 0.85
        for name, held in checks.items():
            print(f"  budget: {name}: {'ok' if held else 'MISSED'}")
            ok = ok and held
    return ok
