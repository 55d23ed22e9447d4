"""The loop through the public API, against the loopback server (real HTTP through litellm)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import chunks as c
from tests.loopback import LoopbackServer, Reply, error, text, tool_calls


class CityInput(BaseModel):
    city: str


def weather_tool(log: list[str] | None = None) -> hs.Tool:
    async def run(input: CityInput, ctx: hs.ToolContext) -> dict[str, Any]:
        if log is not None:
            log.append(input.city)
        return {"city": input.city, "temp": 21}

    return hs.tool(
        name="get_weather", description="Weather in a city", input_schema=CityInput, execute=run
    )


async def collect(result: hs.StreamTextResult) -> list[Any]:
    return [chunk async for chunk in result]


async def test_text_streams_as_start_text_and_finish_chunks(loopback: LoopbackServer) -> None:
    loopback.script(text("Hello world!", pieces=3))
    result = hs.stream_text(**loopback.llm(), prompt="Hi")
    chunks = await collect(result)
    assert chunks == [
        c.Start(),
        c.StartStep(step_number=0),
        c.TextStart(id="text-0"),
        c.TextDelta(id="text-0", delta="Hell"),
        c.TextDelta(id="text-0", delta="o wo"),
        c.TextDelta(id="text-0", delta="rld!"),
        c.TextEnd(id="text-0"),
        c.FinishStep(
            step_number=0,
            finish_reason="stop",
            usage=hs.Usage(input_tokens=10, output_tokens=5, total_tokens=15),
            response_model="loopback",
        ),
        c.Finish(
            finish_reason="stop", usage=hs.Usage(input_tokens=10, output_tokens=5, total_tokens=15)
        ),
    ]
    assert await result.text() == "Hello world!"
    assert loopback.bodies()[0]["messages"] == [{"role": "user", "content": "Hi"}]


async def test_two_step_tool_loop_sends_assistant_and_tool_messages(
    loopback: LoopbackServer,
) -> None:
    calls: list[str] = []
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("It is 21 degrees."))
    result = hs.stream_text(
        **loopback.llm(),
        system="Be brief.",
        prompt="Weather in Paris?",
        tools=[weather_tool(calls)],
    )
    chunks = await collect(result)
    assert calls == ["Paris"]
    assert [type(x).__name__ for x in chunks if not isinstance(x, c.ToolInputDelta)] == [
        "Start",
        "StartStep",
        "ToolInputStart",
        "ToolInputAvailable",
        "ToolOutputAvailable",
        "FinishStep",
        "StartStep",
        "TextStart",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "TextEnd",
        "FinishStep",
        "Finish",
    ]
    second = loopback.bodies()[1]["messages"]
    assert second == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_0_get_weather",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_0_get_weather",
            "content": '{"city": "Paris", "temp": 21}',
        },
    ]
    steps = await result.steps()
    assert [s.finish_reason for s in steps] == ["tool-calls", "stop"]
    assert steps[0].tool_results[0].output == {"city": "Paris", "temp": 21}
    assert result.usage == hs.Usage(input_tokens=20, output_tokens=10, total_tokens=30)
    assert [m["role"] for m in result.response_messages] == ["assistant", "tool", "assistant"]


async def test_parallel_tool_calls_run_concurrently(loopback: LoopbackServer) -> None:
    started: list[str] = []
    both = asyncio.Event()

    async def slow(input: CityInput, ctx: hs.ToolContext) -> str:
        started.append(input.city)
        if len(started) == 2:
            both.set()
        # Only returns if the other call started meanwhile: sequential execution would hang.
        await asyncio.wait_for(both.wait(), timeout=5)
        return f"sunny in {input.city}"

    t = hs.tool(name="get_weather", input_schema=CityInput, execute=slow)
    loopback.script(
        tool_calls(("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})),
        text("ok"),
    )
    result = hs.stream_text(**loopback.llm(), prompt="both", tools=[t])
    chunks = await collect(result)
    outputs = [x for x in chunks if isinstance(x, c.ToolOutputAvailable)]
    assert {o.output for o in outputs} == {"sunny in Paris", "sunny in Rome"}
    tool_msgs = [m for m in loopback.bodies()[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_0_get_weather", "call_1_get_weather"]


async def test_invalid_tool_arguments_become_an_error_result_the_model_sees(
    loopback: LoopbackServer,
) -> None:
    calls: list[str] = []
    loopback.script(tool_calls(("get_weather", {"town": "Paris"})), text("sorry"))
    result = hs.stream_text(**loopback.llm(), prompt="x", tools=[weather_tool(calls)])
    chunks = await collect(result)
    errors = [x for x in chunks if isinstance(x, c.ToolOutputError)]
    assert calls == []
    assert (
        len(errors) == 1
        and "city" in errors[0].error_text
        and "Field required" in errors[0].error_text
    )
    tool_msg = loopback.bodies()[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["content"] == errors[0].error_text
    assert await result.text() == "sorry"


async def test_unparseable_tool_arguments_become_an_error_result(loopback: LoopbackServer) -> None:
    loopback.script(tool_calls(("get_weather", '{"city": "Par')), text("sorry"))
    result = hs.stream_text(**loopback.llm(), prompt="x", tools=[weather_tool()])
    chunks = await collect(result)
    available = next(x for x in chunks if isinstance(x, c.ToolInputAvailable))
    assert available.input == '{"city": "Par'
    assert any(
        isinstance(x, c.ToolOutputError) and "not a JSON object" in x.error_text for x in chunks
    )


async def test_a_raising_tool_becomes_an_error_result_and_the_loop_goes_on(
    loopback: LoopbackServer,
) -> None:
    def boom(input: CityInput) -> str:
        raise RuntimeError("backend down")

    t = hs.tool(name="get_weather", input_schema=CityInput, execute=boom)
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("it failed"))
    result = hs.stream_text(**loopback.llm(), prompt="x", tools=[t])
    chunks = await collect(result)
    err = next(x for x in chunks if isinstance(x, c.ToolOutputError))
    assert err.error_text == "Tool 'get_weather' failed: RuntimeError: backend down"
    assert loopback.bodies()[1]["messages"][-1]["content"] == err.error_text
    assert await result.text() == "it failed"


@pytest.mark.parametrize(
    ("stop_when", "expected_requests"),
    [
        pytest.param(hs.step_count_is(2), 2, id="step_count_is"),
        pytest.param(hs.has_tool_call("stop_here"), 2, id="has_tool_call"),
        pytest.param(lambda steps: len(steps) == 3, 3, id="callable"),
        pytest.param([hs.step_count_is(5), hs.has_tool_call("stop_here")], 2, id="list-any"),
    ],
)
async def test_stop_conditions(
    loopback: LoopbackServer, stop_when: Any, expected_requests: int
) -> None:
    stop_here = hs.tool(name="stop_here", input_schema=CityInput, execute=lambda i: "stopped")
    loopback.script(
        tool_calls(("get_weather", {"city": "A"})),
        tool_calls(("stop_here", {"city": "B"})),
        tool_calls(("get_weather", {"city": "C"})),
        tool_calls(("get_weather", {"city": "D"})),
        text("never"),
    )
    result = hs.stream_text(
        **loopback.llm(), prompt="x", tools=[weather_tool(), stop_here], stop_when=stop_when
    )
    steps = await result.steps()
    assert len(steps) == expected_requests
    assert len(loopback.requests) == expected_requests


async def test_default_stop_is_twenty_steps(loopback: LoopbackServer) -> None:
    loopback.script(*[tool_calls(("get_weather", {"city": str(i)})) for i in range(25)])
    steps = await hs.stream_text(**loopback.llm(), prompt="x", tools=[weather_tool()]).steps()
    assert len(steps) == 20 and len(loopback.requests) == 20


async def test_loop_stops_after_a_step_without_tool_calls(loopback: LoopbackServer) -> None:
    loopback.script(text("done"), text("never"))
    steps = await hs.stream_text(
        **loopback.llm(), prompt="x", tools=[weather_tool()], stop_when=hs.step_count_is(10)
    ).steps()
    assert len(steps) == 1 and len(loopback.requests) == 1


async def test_consumer_stopping_mid_stream_closes_the_model_stream(
    loopback: LoopbackServer,
) -> None:
    loopback.script(hs_reply := text("a b c d e f g h", pieces=8, hang=True))
    assert hs_reply.hang
    result = hs.stream_text(**loopback.llm(), prompt="x")
    async for chunk in result:
        if isinstance(chunk, c.TextDelta):
            break
    # Dropping the iterator closes the run: the HTTP stream is closed, the server sees it.
    for _ in range(100):
        await asyncio.sleep(0.05)
        if loopback.disconnects:
            break
    assert loopback.disconnects == 1
    assert loopback.open_streams == 0


async def test_cancelling_the_task_cancels_running_tools(loopback: LoopbackServer) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever(input: CityInput) -> str:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    t = hs.tool(name="get_weather", input_schema=CityInput, execute=forever)
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})))
    before = asyncio.all_tasks()
    task = asyncio.create_task(hs.stream_text(**loopback.llm(), prompt="x", tools=[t]).consume())
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()
    await asyncio.sleep(0)
    assert {t for t in asyncio.all_tasks() - before if not t.done()} == set()


async def test_aclose_stops_the_run_and_its_tools(loopback: LoopbackServer) -> None:
    cancelled = asyncio.Event()

    async def forever(input: CityInput) -> str:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    fast = hs.tool(name="fast", input_schema=CityInput, execute=lambda i: "quick")
    t = hs.tool(name="get_weather", input_schema=CityInput, execute=forever)
    loopback.script(tool_calls(("fast", {"city": "A"}), ("get_weather", {"city": "B"})))
    result = hs.stream_text(**loopback.llm(), prompt="x", tools=[t, fast])
    async for chunk in result:
        if isinstance(chunk, c.ToolOutputAvailable):
            break  # the slow tool is still running now
    await result.aclose()
    assert cancelled.is_set()


async def test_model_errors_are_translated(loopback: LoopbackServer) -> None:
    loopback.script(error(429, "slow down"))
    result = hs.stream_text(**loopback.llm(), prompt="x", max_retries=0)
    chunks = await collect(result)
    assert isinstance(chunks[-1], c.ErrorChunk)
    with pytest.raises(hs.errors.ModelRateLimitError) as info:
        await result.text()
    assert info.value.retryable is True and info.value.http_status == 429
    loopback.script(error(401, "bad key"))
    with pytest.raises(hs.errors.ModelAuthError):
        await hs.generate_text(**loopback.llm(), prompt="x", max_retries=0)


async def test_callbacks_see_chunks_steps_finish_and_errors(loopback: LoopbackServer) -> None:
    seen: dict[str, list[Any]] = {"chunk": [], "step": [], "finish": [], "error": []}

    async def on_step(step: hs.StepResult) -> None:
        seen["step"].append(step.step_number)

    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("ok"))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="x",
        tools=[weather_tool()],
        on_chunk=lambda ch: seen["chunk"].append(ch.type),
        on_step_finish=on_step,
        on_finish=lambda state: seen["finish"].append(state.finish_reason),
        on_error=lambda e: seen["error"].append(e),
    )
    chunks = await collect(result)
    assert seen["chunk"] == [ch.type for ch in chunks]
    assert seen["step"] == [0, 1]
    assert seen["finish"] == ["stop"]
    assert seen["error"] == []
    loopback.script(error(500, "boom"))
    failing = hs.stream_text(
        **loopback.llm(),
        prompt="x",
        max_retries=0,
        on_error=lambda e: seen["error"].append(e),
    )
    await collect(failing)
    assert len(seen["error"]) == 1 and isinstance(seen["error"][0], hs.ModelError)


async def test_generate_text_returns_everything_at_once(loopback: LoopbackServer) -> None:
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("21 degrees"))
    out = await hs.generate_text(
        **loopback.llm(), prompt="x", tools={"get_weather": weather_tool()}
    )
    assert out.text == "21 degrees"
    assert len(out.steps) == 2 and out.finish_reason == "stop"
    assert out.usage.total_tokens == 30
    assert out.response_messages[-1] == {"role": "assistant", "content": "21 degrees"}


async def test_extra_keyword_arguments_reach_litellm(loopback: LoopbackServer) -> None:
    loopback.script(text("ok"))
    await hs.generate_text(**loopback.llm(), prompt="x", temperature=0.3, max_tokens=77, top_p=0.5)
    body = loopback.bodies()[0]
    assert (body["temperature"], body["max_tokens"], body["top_p"]) == (0.3, 77, 0.5)


async def test_a_result_is_iterated_once(loopback: LoopbackServer) -> None:
    loopback.script(text("ok"))
    result = hs.stream_text(**loopback.llm(), prompt="x")
    await collect(result)
    with pytest.raises(RuntimeError):
        await collect(result)
    assert await result.text() == "ok"


async def test_tool_messages_are_valid_json_for_pydantic_outputs(loopback: LoopbackServer) -> None:
    class Out(BaseModel):
        temp: int

    t = hs.tool(name="get_weather", input_schema=CityInput, execute=lambda i: Out(temp=3))
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("ok"))
    chunks = await collect(hs.stream_text(**loopback.llm(), prompt="x", tools=[t]))
    assert next(x for x in chunks if isinstance(x, c.ToolOutputAvailable)).output == {"temp": 3}
    assert json.loads(loopback.bodies()[1]["messages"][-1]["content"]) == {"temp": 3}


async def test_a_step_records_the_sources_it_cited_and_the_data_parts_its_tools_kept(
    loopback: LoopbackServer,
) -> None:
    async def run(input: CityInput, ctx: hs.ToolContext) -> str:
        ctx.write_data("progress", {"done": 1}, id="p")
        ctx.write_data("tick", 1, transient=True)  # shown, not kept
        return "sunny"

    weather = hs.tool(name="get_weather", input_schema=CityInput, execute=run)
    cited = {"type": "url_citation", "url_citation": {"url": "https://a.example/", "title": "A"}}
    loopback.script(
        tool_calls(("get_weather", {"city": "Oslo"})),
        Reply(deltas=[{"content": "see "}, {"content": "this", "annotations": [cited, cited]}]),
    )
    steps = await hs.stream_text(**loopback.llm(), prompt="x", tools=[weather]).steps()
    assert [(s.sources, s.data) for s in steps] == [
        ([], [c.DataChunk(name="progress", data={"done": 1}, id="p")]),
        ([c.SourceUrl(source_id="source-1-1", url="https://a.example/", title="A")], []),
    ]
