"""helix_stream.testing drives the README's examples on both wire families: text, reasoning,
tools, approvals, errors, usage; in the loop, an Agent, the chat server and wrap_model. Each
request crosses real HTTP through litellm to the scripted server, whose ``.requests`` are read
here."""

from __future__ import annotations

import json
from typing import Any

import httpx
import litellm
import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.server import create_app
from helix_stream.testing import FunctionModel, ScriptedModel
from tests._readme import readme_example
from tests.server._asgi import sse_data

WIRES = [pytest.param("openai", id="openai"), pytest.param("anthropic", id="anthropic")]
PARIS = {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}


@hs.tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny", "temp_c": 21}


def tool_result_sent(wire: str, request: dict[str, Any]) -> str:
    """The tool result the model was sent, in the wire family's own form."""
    last = request["messages"][-1]
    if wire == "openai":
        assert last["role"] == "tool"
        return str(last["content"])
    (block,) = [b for b in last["content"] if b["type"] == "tool_result"]
    content = block["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.mark.parametrize("wire", WIRES)
async def test_text_reasoning_and_usage(wire: str) -> None:
    model = ScriptedModel(
        [
            {
                "reasoning": "The user greets.",
                "text": "Hello there!",
                "usage": {"input_tokens": 12, "output_tokens": 3},
            }
        ],
        wire=wire,
    )
    result = hs.stream_text(model=model, system="Be brief.", prompt="Hi")
    kinds = [chunk.type async for chunk in result]
    assert await result.text() == "Hello there!"
    assert "reasoning-delta" in kinds and "text-delta" in kinds
    (step,) = await result.steps()
    assert step.reasoning == "The user greets."
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 3)
    (request,) = model.requests
    assert request["stream"] is True
    if wire == "openai":
        assert request["messages"][0] == {"role": "system", "content": "Be brief."}
    else:
        assert request["system"][0]["text"] == "Be brief."  # Anthropic's own field
    content = request["messages"][-1]["content"]
    assert (content if wire == "openai" else content[0]["text"]) == "Hi"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_tool_round_trip(wire: str) -> None:
    model = ScriptedModel([PARIS, {"text": "Sunny in Paris."}], wire=wire)
    out = await hs.generate_text(model=model, prompt="Weather in Paris?", tools=[get_weather])
    assert out.text == "Sunny in Paris."
    assert [call.name for call in out.steps[0].tool_calls] == ["get_weather"]
    sent = json.loads(tool_result_sent(wire, model.requests[1]))
    assert sent == {"city": "Paris", "forecast": "sunny", "temp_c": 21}
    names = [t.get("name") or t["function"]["name"] for t in model.requests[0]["tools"]]
    assert names == ["get_weather"]


@pytest.mark.parametrize("wire", WIRES)
async def test_an_approval_pauses_the_agent_and_the_answer_runs_the_tool(wire: str) -> None:
    ran: list[str] = []

    @hs.tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(path)
        return "deleted"

    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "delete_file", "arguments": {"path": "a.txt"}}]},
            {"text": "Done."},
        ],
        wire=wire,
    )
    agent = hs.Agent(name="files", model=model, tools=[delete_file])
    executor = hs.Executor()
    chunks = [chunk async for chunk in executor.run(agent, "s", "Delete a.txt")]
    (ask,) = [ch for ch in chunks if isinstance(ch, c.ToolApprovalRequest)]
    assert ran == [] and len(model.requests) == 1
    answers = [hs.ApprovalAnswer(ask.approval_id, True)]
    assert await executor.run(agent, "s", answers=answers).text() == "Done."
    assert ran == ["a.txt"] and len(model.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_errors_are_helix_and_litellm_errors_and_a_retry_takes_the_next_reply(
    wire: str,
) -> None:
    model = ScriptedModel([{"error": 429}, {"text": "after the retry"}, {"error": 429}], wire=wire)
    assert (await hs.generate_text(model=model, prompt="x")).text == "after the retry"
    with pytest.raises(litellm.RateLimitError) as info:
        await hs.generate_text(model=model, prompt="x", max_retries=0)
    assert isinstance(info.value, hs.ModelError) and info.value.http_status == 429
    assert len(model.requests) == 3


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stall_and_a_cut_stream(wire: str) -> None:
    model = ScriptedModel(
        [{"text": "late", "stall": 2.0}, {"text": "one two three four", "cut_after": 2}], wire=wire
    )
    with pytest.raises(hs.ModelTimeoutError):
        await hs.generate_text(
            model=model, prompt="x", max_retries=0, timeout=hs.Timeout(first_chunk=0.3)
        )
    with pytest.raises(hs.ModelError):
        await hs.generate_text(model=model, prompt="x", max_retries=0)


async def test_in_the_chat_server_and_through_wrap_model() -> None:
    model = ScriptedModel([{"text": "Hello from the server."}, {"text": "Wrapped."}])
    app = create_app(hs.Executor(), hs.Agent(name="chat", model=model))
    body = {
        "id": "chat-1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}],
        "trigger": "submit-message",
    }
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        answer = await client.post("/api/chat", json=body)
    events = sse_data(answer.content)
    deltas = [e["delta"] for e in events if isinstance(e, dict) and e["type"] == "text-delta"]
    assert "".join(deltas) == "Hello from the server." and events[-1] == "[DONE]"
    wrapped = hs.wrap_model(model, [hs.default_settings(temperature=0.5)])
    assert (await hs.generate_text(model=wrapped, prompt="x")).text == "Wrapped."
    assert model.requests[1]["temperature"] == 0.5


async def test_a_function_model_answers_from_the_request() -> None:
    def echo(request: dict[str, Any]) -> dict[str, Any]:
        return {"text": f"You said: {request['messages'][-1]['content']}"}

    assert (
        await hs.generate_text(model=FunctionModel(echo), prompt="ping")
    ).text == "You said: ping"


def test_a_bad_reply_is_refused_when_the_script_is_made() -> None:
    with pytest.raises(hs.InvalidRequestError, match="unknown key"):
        ScriptedModel([{"txt": "typo"}])
    with pytest.raises(hs.InvalidRequestError, match="HTTP status"):
        ScriptedModel([{"error": "429"}])


async def test_a_call_past_the_script_fails_saying_so() -> None:
    model = ScriptedModel([{"text": "only one"}])
    await hs.generate_text(model=model, prompt="x")
    with pytest.raises(hs.ModelError, match="the script has 1 replies; this is call 2"):
        await hs.generate_text(model=model, prompt="x", max_retries=0)


async def test_the_readme_example_passes() -> None:
    example = readme_example("## Testing your agent")
    await example.test_the_agent_answers_with_the_tools_result()


@pytest.mark.parametrize("wire", WIRES)
async def test_a_call_without_a_stream_gets_one_json_answer(wire: str) -> None:
    model = ScriptedModel([PARIS, {"text": "Sunny."}], wire=wire)
    whole = hs.wrap_model(model, [hs.simulate_streaming()])  # non-streaming calls, replayed
    out = await hs.generate_text(model=whole, prompt="Weather?", tools=[get_weather])
    assert out.text == "Sunny." and [c.name for c in out.steps[0].tool_calls] == ["get_weather"]
    assert [r.get("stream", False) for r in model.requests] == [False, False]
