"""litellm users' code in the loop: a Router with fallbacks, one retry policy, structured output.

Real HTTP through litellm to loopback servers; requests are counted on the servers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c, errors
from helix_stream.models._litellm import litellm_module
from helix_stream.telemetry import TelemetrySettings
from tests.loopback import LoopbackServer, Reply, error, text, tool_calls


class City(BaseModel):
    name: str
    population: int


PARIS = {"name": "Paris", "population": 2102650}


class Query(BaseModel):
    q: str


async def search(input: Query, ctx: hs.ToolContext) -> str:
    return f"results for {input.q}"


SEARCH = hs.tool(name="search", description="Search", input_schema=Query, execute=search)


@pytest.fixture
def pair() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    a, b = LoopbackServer().start(), LoopbackServer().start()
    yield a, b
    a.stop()
    b.stop()


def router_over(a: LoopbackServer, b: LoopbackServer, **kw: Any) -> Any:
    return litellm_module().Router(
        model_list=[
            {
                "model_name": "fast",
                "litellm_params": {
                    "model": "openai/model-a",
                    "api_base": a.api_base,
                    "api_key": "sk-a",
                },
                "model_info": {"id": "dep-a"},
            },
            {
                "model_name": "slow",
                "litellm_params": {
                    "model": "openai/model-b",
                    "api_base": b.api_base,
                    "api_key": "sk-b",
                },
                "model_info": {"id": "dep-b"},
            },
        ],
        **kw,
    )


# -- Router --------------------------------------------------------------------------------


async def test_a_router_model_group_falls_back_and_the_step_names_who_answered(
    pair: tuple[LoopbackServer, LoopbackServer],
) -> None:
    a, b = pair
    a.script(*[error(429, "slow down")] * 3)
    b.script(text("from b"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    router = router_over(a, b, fallbacks=[{"fast": ["slow"]}], num_retries=3)
    result = hs.stream_text(
        model="fast",
        router=router,
        prompt="hi",
        telemetry=TelemetrySettings(tracer_provider=provider),
    )
    chunks = [x async for x in result]
    assert await result.text() == "from b"
    (finish_step,) = [x for x in chunks if isinstance(x, c.FinishStep)]
    assert finish_step.response_model == "model-b"
    assert (await result.steps())[0].response_model == "model-b"
    assert (len(a.requests), len(b.requests)) == (1, 1)  # the Router's 3 retries are off
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    attrs = dict(chat.attributes or {})
    assert attrs["gen_ai.response.model"] == "model-b"
    assert attrs["helix.response.deployment_id"] == "dep-b"
    assert attrs["server.port"] == int(b.api_base.rsplit(":", 1)[1].split("/")[0])
    assert attrs["gen_ai.response.id"] == "chatcmpl-loopback"
    provider.shutdown()


async def test_litellms_fallbacks_param_works_in_the_loop(
    pair: tuple[LoopbackServer, LoopbackServer],
) -> None:
    a, b = pair
    a.script(error(429))
    b.script(text("fell back"))
    out = await hs.generate_text(
        model="openai/model-a",
        api_base=a.api_base,
        api_key="sk-a",
        prompt="hi",
        max_retries=0,
        fallbacks=[{"model": "openai/model-b", "api_base": b.api_base, "api_key": "sk-b"}],
    )
    assert (out.text, out.steps[0].response_model) == ("fell back", "model-b")


async def test_an_agent_runs_through_its_router(
    pair: tuple[LoopbackServer, LoopbackServer],
) -> None:
    a, b = pair
    a.script(error(503, "down"))
    b.script(text("agent answer"))
    agent = hs.Agent(
        name="routed",
        model="fast",
        router=router_over(a, b, fallbacks=[{"fast": ["slow"]}]),
        max_retries=0,
    )
    executor = hs.Executor(store=hs.MemoryStore())
    result = executor.run(agent, "s1", "hi")
    assert await result.text() == "agent answer"
    assert (await result.steps())[0].response_model == "model-b"
    assert (len(a.requests), len(b.requests)) == (1, 1)


# -- retries --------------------------------------------------------------------------------


async def test_a_rate_limited_step_is_retried_by_the_policy_and_streams_once(
    loopback: LoopbackServer,
) -> None:
    loopback.script(
        error(429, headers={"retry-after-ms": "10"}),
        error(503, headers={"retry-after-ms": "10"}),
        text("Hello there!", pieces=3),
    )
    result = hs.stream_text(**loopback.llm(), prompt="hi")
    chunks = [x async for x in result]
    assert "".join(x.delta for x in chunks if isinstance(x, c.TextDelta)) == "Hello there!"
    assert [type(x).__name__ for x in chunks].count("StartStep") == 1
    assert len(loopback.requests) == 3  # max_retries=2 by default: 1 + 2, nothing more


async def test_max_retries_bounds_the_requests_and_the_last_error_is_the_runs(
    loopback: LoopbackServer,
) -> None:
    loopback.script(*[error(429, headers={"retry-after-ms": "5"})] * 5)
    with pytest.raises(errors.ModelRateLimitError):
        await hs.generate_text(**loopback.llm(), prompt="hi", max_retries=1)
    assert len(loopback.requests) == 2


async def test_a_failure_after_text_was_streamed_is_never_retried(
    loopback: LoopbackServer,
) -> None:
    loopback.script(
        Reply(deltas=[{"content": "Half an ans"}, {"content": "wer"}], fail_after=1, error="cut"),
        text("a second copy would duplicate the text"),
    )
    result = hs.stream_text(**loopback.llm(), prompt="hi")
    chunks = [x async for x in result]
    assert [x.delta for x in chunks if isinstance(x, c.TextDelta)] == ["Half an ans"]
    assert isinstance(chunks[-1], c.ErrorChunk)
    assert len(loopback.requests) == 1


def test_a_wrong_retry_count_is_refused_before_anything_runs(loopback: LoopbackServer) -> None:
    with pytest.raises(errors.InvalidRequestError):
        hs.stream_text(**loopback.llm(), prompt="hi", max_retries=-1)
    with pytest.raises(errors.InvalidRequestError):
        hs.Agent(name="a", max_retries=-1)
    assert loopback.requests == []


# -- structured output ------------------------------------------------------------------------


def json_reply(value: Any, piece: int = 6) -> Reply:
    raw = json.dumps(value)
    return Reply(deltas=[{"content": raw[i : i + piece]} for i in range(0, len(raw), piece)])


def gpt4o(server: LoopbackServer) -> dict[str, Any]:
    """A model litellm's map says takes a JSON-schema response_format, at the loopback."""
    return {"model": "openai/gpt-4o-mini", "api_base": server.api_base, "api_key": "sk-loopback"}


async def test_output_returns_an_instance_and_streams_partial_objects(
    loopback: LoopbackServer,
) -> None:
    loopback.script(json_reply(PARIS))
    result = hs.stream_text(**gpt4o(loopback), prompt="a city", output=City)
    partials = [p async for p in result.partial_output_stream()]
    assert result.output == City(**PARIS)
    assert partials[-1] == PARIS and len(partials) >= 4
    assert all(set(p) <= set(PARIS) for p in partials)
    body = loopback.bodies()[0]
    assert body["response_format"]["type"] == "json_schema"
    assert "tools" not in body  # the finish tool is not offered when the provider does JSON


async def test_generate_text_output_with_tools_parses_the_last_steps_json(
    loopback: LoopbackServer,
) -> None:
    loopback.script(tool_calls(("search", {"q": "paris"})), json_reply(PARIS))
    out = await hs.generate_text(**gpt4o(loopback), prompt="a city", tools=[SEARCH], output=City)
    assert out.output == City(**PARIS)
    first, second = loopback.bodies()
    assert [t["function"]["name"] for t in first["tools"]] == ["search"]
    assert second["response_format"] == first["response_format"]


async def test_invalid_output_raises_with_the_raw_text(loopback: LoopbackServer) -> None:
    loopback.script(text('{"name": "Paris"}'))
    with pytest.raises(errors.OutputValidationError) as info:
        await hs.generate_text(**gpt4o(loopback), prompt="a city", output=City)
    assert info.value.text == '{"name": "Paris"}' and "population" in info.value.errors


async def test_without_json_schema_support_the_finish_tool_carries_the_output(
    loopback: LoopbackServer,
) -> None:
    loopback.script(tool_calls(("__finish__", PARIS), fragment=5))
    result = hs.stream_text(**loopback.llm(), prompt="a city", output=City)
    partials = [p async for p in result.partial_output_stream()]
    assert result.output == City(**PARIS) and partials[-1] == PARIS
    body = loopback.bodies()[0]
    assert "response_format" not in body
    assert "__finish__" in [t["function"]["name"] for t in body["tools"]]


async def test_a_text_answer_is_followed_by_a_forced_finish_call(loopback: LoopbackServer) -> None:
    loopback.script(text("Paris, I think."), tool_calls(("__finish__", PARIS)))
    out = await hs.generate_text(**loopback.llm(), prompt="a city", output=City)
    assert out.output == City(**PARIS)
    bodies = loopback.bodies()
    assert len(bodies) == 2 and "tool_choice" not in bodies[0]
    assert bodies[1]["tool_choice"] == {"type": "function", "function": {"name": "__finish__"}}


async def test_an_invalid_finish_call_is_shown_to_the_model_then_raises_with_its_arguments(
    loopback: LoopbackServer,
) -> None:
    loopback.script(
        tool_calls(("__finish__", {"name": 3})),  # invalid: the model sees the error, goes on
        text("I give up."),  # no finish call: the next call forces it
        tool_calls(("__finish__", {"name": 4})),  # forced, still invalid: the run fails
    )
    with pytest.raises(errors.OutputValidationError) as info:
        await hs.generate_text(**loopback.llm(), prompt="a city", output=City)
    assert json.loads(info.value.text) == {"name": 4}
    assert "population" in info.value.errors
    bodies = loopback.bodies()
    assert len(bodies) == 3
    assert bodies[1]["messages"][-1]["role"] == "tool"  # the validation error, for the model
    assert bodies[2]["tool_choice"]["function"]["name"] == "__finish__"


def test_output_must_be_a_pydantic_model_and_not_given_twice(loopback: LoopbackServer) -> None:
    with pytest.raises(errors.InvalidRequestError):
        hs.stream_text(**loopback.llm(), prompt="x", output={"type": "object"})  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidRequestError):
        hs.stream_text(
            **loopback.llm(), prompt="x", output=City, response_format={"type": "json_object"}
        )
    assert loopback.requests == []


async def test_an_agents_output_schema_returns_an_instance(loopback: LoopbackServer) -> None:
    agent = hs.Agent(
        name="structured",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "k"},
        output_schema=City,
    )
    loopback.script(tool_calls(("__finish__", PARIS)))
    result = hs.Executor(store=hs.MemoryStore()).run(agent, "s1", "a city")
    await result.consume()
    assert result.output == City(**PARIS)
