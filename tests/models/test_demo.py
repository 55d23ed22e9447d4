"""The embedded demo model ``helix/demo``: deterministic, no network, calls tools."""

from __future__ import annotations

import subprocess
import sys

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.models.demo import demo_reply


@hs.tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather in a city."""
    return {"city": city, "forecast": "sunny", "temp_c": 21}


async def test_demo_streams_word_by_word() -> None:
    result = hs.stream_text(model="helix/demo", prompt="tell me a story")
    deltas = [ch.delta async for ch in result if isinstance(ch, c.TextDelta)]
    assert deltas == ["You ", "said: ", "tell ", "me ", "a ", "story"]


async def test_demo_calls_the_tool_the_message_asks_for_then_answers_from_it() -> None:
    out = await hs.generate_text(
        model="helix/demo", prompt="What is the weather in Paris?", tools=[get_weather]
    )
    assert out.steps[0].tool_calls[0].name == "get_weather"
    assert out.steps[0].tool_calls[0].input == {"city": "Paris"}
    assert (
        out.text
        == 'Done: get_weather returned {"city": "Paris", "forecast": "sunny", "temp_c": 21}.'
    )


def test_demo_without_a_matching_tool_answers_in_text() -> None:
    tools = [get_weather.schema(None)]
    reply = demo_reply([{"role": "user", "content": "hello"}], tools)
    assert reply.tool_calls == [] and reply.text == "You said: hello"


def test_demo_echoes_its_instruction_rows() -> None:
    messages = [
        {"role": "system", "content": "Sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "system",
            "content": '<context kind="instruction" source="app">\nAnswer in French.\n</context>',
        },
        {"role": "user", "content": "What are your instructions?"},
    ]
    assert demo_reply(messages, None).text == "My active instructions: 1. Answer in French."
    messages[-1] = {"role": "user", "content": "hello"}
    assert (
        demo_reply(messages, None).text
        == "You said: hello (Following the instruction: Answer in French.)"
    )


def test_importing_the_package_does_not_import_litellm() -> None:
    code = "import sys, helix_stream; print('litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
