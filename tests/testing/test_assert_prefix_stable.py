"""``assert_prefix_stable`` in a user's own test: a ScriptedModel records what the provider
would receive; the helper passes a stable session and fails on each of the four prefix breaks,
naming the request and the segment (the OpenAI body: the system prompt is message 0)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.testing import ScriptedModel, assert_prefix_stable


class City(BaseModel):
    city: str


def weather(description: str = "The weather in a city") -> hs.Tool:
    return hs.tool(
        name="weather", description=description, input_schema=City, execute=lambda i: "9"
    )


def clock() -> hs.Tool:
    return hs.tool(name="clock", description="The time", input_schema=City, execute=lambda i: "9")


def stamp_first_message(step: Any) -> dict[str, Any]:
    messages = [dict(m) for m in step.messages]
    messages[0]["content"] = "[12:01] " + str(messages[0]["content"])
    return {"messages": messages}


async def session(model: ScriptedModel, second: dict[str, Any]) -> None:
    """Two turns of one session: the app's agent, then the same agent with ``second`` over it."""
    executor = hs.Executor(store=hs.MemoryStore())
    base: dict[str, Any] = {
        "name": "bot",
        "model": model,
        "system": "You are brief.",
        "tools": [weather(), clock()],
    }
    await executor.run(hs.Agent(**base), "s1", "Hello").text()
    await executor.run(hs.Agent(**{**base, **second}), "s1", "And in Oslo?").text()


async def test_a_stable_session_passes() -> None:
    model = ScriptedModel([{"text": "Hi!"}, {"text": "Sunny."}])
    await session(model, {})
    assert len(model.requests) == 2
    assert_prefix_stable(model.requests)


@pytest.mark.parametrize(
    ("second", "segment"),
    [
        pytest.param(
            {"tools": [weather("Weather, in Celsius"), clock()]}, "tools", id="tool-description"
        ),
        pytest.param({"system": "You are brief. It is 12:01."}, "system", id="system-prompt"),
        pytest.param({"tools": [clock(), weather()]}, "tools", id="tools-reordered"),
        pytest.param({"prepare_step": stamp_first_message}, "message 1", id="old-message-edited"),
    ],
)
async def test_each_break_fails_naming_the_request_and_the_segment(
    second: dict[str, Any], segment: str
) -> None:
    model = ScriptedModel([{"text": "Hi!"}, {"text": "Sunny."}])
    await session(model, second)
    with pytest.raises(AssertionError) as failed:
        assert_prefix_stable(model.requests)
    assert str(failed.value).startswith(
        f"request 1 breaks the cached prefix of request 0 at {segment!r}"
    )


async def test_a_reordered_tool_list_shows_both_orders() -> None:
    model = ScriptedModel([{"text": "Hi!"}, {"text": "Sunny."}])
    await session(model, {"tools": [clock(), weather()]})
    with pytest.raises(
        AssertionError, match=r"before: \['weather', 'clock'\], after: \['clock', 'weather'\]"
    ):
        assert_prefix_stable(model.requests)


def test_json_bytes_and_recorded_requests_are_read_and_anything_else_refused() -> None:
    first = {"messages": [{"role": "user", "content": "Hi"}]}
    second = {
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]
    }
    assert_prefix_stable([b'{"messages": [{"role": "user", "content": "Hi"}]}', second])
    with pytest.raises(AssertionError, match="'message 0'"):
        assert_prefix_stable([second, '{"messages": [{"role": "user", "content": "Ho"}]}'])
    assert_prefix_stable([first])
    assert_prefix_stable([])
    with pytest.raises(TypeError, match="request bodies"):
        assert_prefix_stable([first, 42])
