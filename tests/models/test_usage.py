"""Usage with prompt-cache and reasoning tokens, read from litellm's streamed usage (real HTTP)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.models._fields import read_usage
from helix_stream.models._litellm import acompletion
from helix_stream.models._parse import StepParser
from tests.loopback import LoopbackServer, text, tool_calls


class Query(BaseModel):
    q: str


OPENAI_DETAILS = {
    "prompt_tokens_details": {"cached_tokens": 60},
    "completion_tokens_details": {"reasoning_tokens": 7},
}


async def parse(**params: Any) -> StepParser:
    stream = await acompletion(
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
        **params,
    )
    parser = StepParser(0)
    async for raw in stream:
        parser.feed(raw)
    return parser


async def test_openai_cached_and_reasoning_tokens_are_read(loopback: LoopbackServer) -> None:
    loopback.script(text("Hi there", usage=(100, 20), usage_details=OPENAI_DETAILS))
    parser = await parse(**loopback.llm())
    assert parser.usage == hs.Usage(
        input_tokens=100,
        output_tokens=20,
        total_tokens=120,
        cached_input_tokens=60,
        cache_creation_input_tokens=0,
        reasoning_tokens=7,
    )


async def test_anthropic_cache_reads_and_writes_are_read_through_litellms_adapter(
    loopback: LoopbackServer,
) -> None:
    loopback.script(
        text(
            "Hi there",
            usage=(100, 20),
            usage_details={"cache_read_input_tokens": 60, "cache_creation_input_tokens": 30},
        )
    )
    parser = await parse(
        model="anthropic/claude-3-5-sonnet-20241022",
        api_base=loopback.anthropic_base,
        api_key="sk-ant-loopback",
    )
    assert "".join(parser.text) == "Hi there"
    assert loopback.requests and b'"claude-3-5-sonnet-20241022"' in loopback.requests[0]
    # litellm counts the cache reads and writes into the prompt tokens (100 + 60 + 30).
    assert parser.usage == hs.Usage(
        input_tokens=190,
        output_tokens=20,
        total_tokens=210,
        cached_input_tokens=60,
        cache_creation_input_tokens=30,
        reasoning_tokens=0,
    )


async def test_a_provider_without_details_reports_zeros(loopback: LoopbackServer) -> None:
    loopback.script(text("plain", usage=(3, 2)))
    parser = await parse(**loopback.llm())
    assert parser.usage == hs.Usage(input_tokens=3, output_tokens=2, total_tokens=5)


async def test_steps_and_totals_carry_cache_and_reasoning_tokens(
    loopback: LoopbackServer,
) -> None:
    async def lookup(input: Query, ctx: hs.ToolContext) -> str:
        return "found"

    tool = hs.tool(name="lookup", description="Look up", input_schema=Query, execute=lookup)
    loopback.script(
        tool_calls(("lookup", {"q": "x"}), usage=(100, 10), usage_details=OPENAI_DETAILS),
        text(
            "done",
            usage=(150, 30),
            usage_details={
                "prompt_tokens_details": {"cached_tokens": 90},
                "completion_tokens_details": {"reasoning_tokens": 12},
            },
        ),
    )
    result = hs.stream_text(**loopback.llm(), prompt="x", tools=[tool])
    chunks = [chunk async for chunk in result]
    steps = await result.steps()
    first = hs.Usage(
        input_tokens=100,
        output_tokens=10,
        total_tokens=110,
        cached_input_tokens=60,
        reasoning_tokens=7,
    )
    second = hs.Usage(
        input_tokens=150,
        output_tokens=30,
        total_tokens=180,
        cached_input_tokens=90,
        reasoning_tokens=12,
    )
    assert [s.usage for s in steps] == [first, second]
    total = hs.Usage(
        input_tokens=250,
        output_tokens=40,
        total_tokens=290,
        cached_input_tokens=150,
        reasoning_tokens=19,
    )
    assert result.usage == total
    assert [x.usage for x in chunks if isinstance(x, c.FinishStep)] == [first, second]
    assert isinstance(chunks[-1], c.Finish) and chunks[-1].usage == total


def test_usage_adds_every_counter() -> None:
    a = hs.Usage(
        input_tokens=1,
        output_tokens=2,
        total_tokens=3,
        cached_input_tokens=4,
        cache_creation_input_tokens=5,
        reasoning_tokens=6,
    )
    assert a + a == hs.Usage(
        input_tokens=2,
        output_tokens=4,
        total_tokens=6,
        cached_input_tokens=8,
        cache_creation_input_tokens=10,
        reasoning_tokens=12,
    )


def test_read_usage_takes_a_dict_and_ignores_junk() -> None:
    usage = read_usage(
        {
            "prompt_tokens": 9,
            "completion_tokens": None,
            "total_tokens": "9",
            "cache_read_input_tokens": 4,
            "prompt_tokens_details": None,
            "completion_tokens_details": {"reasoning_tokens": True},
        }
    )
    # The total is input + output, whatever the provider sent (README, "Your litellm setup as it is: Router, retries, usage, structured output").
    assert usage == hs.Usage(input_tokens=9, total_tokens=9, cached_input_tokens=4)


def test_the_total_is_input_plus_output_not_the_providers_own() -> None:
    # xAI counts reasoning tokens outside completion_tokens into its total; litellm's wrapper
    # reports prompt + completion, and so does helix on every path.
    usage = read_usage(
        {
            "prompt_tokens": 291,
            "completion_tokens": 26,
            "total_tokens": 513,
            "completion_tokens_details": {"reasoning_tokens": 196},
        }
    )
    assert usage == hs.Usage(
        input_tokens=291, output_tokens=26, total_tokens=317, reasoning_tokens=196
    )
