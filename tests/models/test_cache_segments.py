"""The cache segments (``models/_cache_segments.py``): the one rule the ledger and
``assert_prefix_stable`` share. Each of the four breaks is named; markers and a strict
extension are not breaks; every provider's body shape is understood."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from helix_stream.models._cache_segments import breakpoints, fingerprint, first_divergence


def weather(description: str = "The weather in a city") -> dict[str, Any]:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    return {
        "type": "function",
        "function": {"name": "weather", "description": description, "parameters": schema},
    }


def clock() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": "clock", "description": "The time", "parameters": {"type": "object"}},
    }


def openai_request() -> dict[str, Any]:
    return {
        "model": "anthropic/claude-sonnet-4-5",
        "tools": [weather(), clock()],
        "messages": [
            {"role": "system", "content": "You are brief."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi!"},
            {"role": "user", "content": "Weather in Oslo?"},
        ],
    }


def diverged(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    return first_divergence(fingerprint(before), fingerprint(after))


def test_a_strict_extension_and_the_same_request_diverge_nowhere() -> None:
    before = openai_request()
    after = copy.deepcopy(before)
    after["messages"] += [
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "Thanks"},
    ]
    assert diverged(before, after) is None
    assert diverged(before, copy.deepcopy(before)) is None


def _changed_description(r: dict[str, Any]) -> None:
    r["tools"][0] = weather("The weather in a city, in Celsius")


def _edited_system(r: dict[str, Any]) -> None:
    r["messages"][0]["content"] = "You are brief. Today is Monday."


def _reordered_tools(r: dict[str, Any]) -> None:
    r["tools"].reverse()


def _edited_old_message(r: dict[str, Any]) -> None:
    r["messages"][1]["content"] = "Hello!"


@pytest.mark.parametrize(
    ("edit", "segment"),
    [
        pytest.param(_changed_description, "tools", id="changed-tool-description"),
        pytest.param(_edited_system, "system", id="edited-system-prompt"),
        pytest.param(_reordered_tools, "tools", id="tools-reordered"),
        pytest.param(_edited_old_message, "message 1", id="edited-old-message"),
    ],
)
def test_each_break_is_named_by_its_first_segment(edit: Any, segment: str) -> None:
    before = openai_request()
    after = copy.deepcopy(before)
    after["messages"].append({"role": "assistant", "content": "Sunny."})
    edit(after)
    assert diverged(before, after) == segment


def test_the_first_segment_in_cache_order_wins() -> None:
    before = openai_request()
    after = copy.deepcopy(before)
    _edited_old_message(after)
    _edited_system(after)
    assert diverged(before, after) == "system"
    _reordered_tools(after)
    assert diverged(before, after) == "tools"


def test_a_shorter_history_is_a_break_at_the_first_missing_message() -> None:
    before = openai_request()
    after = copy.deepcopy(before)
    del after["messages"][2:]
    assert diverged(before, after) == "message 2"


def test_a_key_order_change_is_a_break_as_it_is_on_the_wire() -> None:
    before = openai_request()
    after = copy.deepcopy(before)
    params = after["tools"][0]["function"]["parameters"]
    after["tools"][0]["function"]["parameters"] = dict(reversed(list(params.items())))
    assert diverged(before, after) == "tools"


def test_cache_markers_are_not_part_of_a_segment() -> None:
    before = openai_request()
    after = copy.deepcopy(before)
    mark = {"type": "ephemeral", "ttl": "1h"}
    after["tools"][-1]["cache_control"] = mark
    after["messages"][0]["content"] = [
        {"type": "text", "text": "You are brief.", "cache_control": mark}
    ]
    after["messages"][3] = {**after["messages"][3], "cache_control": {"type": "ephemeral"}}
    assert diverged(before, after) is None


def anthropic_body() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "tools": [{"name": "weather", "input_schema": {"type": "object"}, "description": "d"}],
        "system": [
            {"type": "text", "text": "You are brief.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hello"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hi!"}]},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Oslo?", "cache_control": {"type": "ephemeral"}}
                ],
            },
        ],
    }


def test_an_anthropic_body_has_its_system_apart_and_numbers_its_own_messages() -> None:
    before = anthropic_body()
    after = copy.deepcopy(before)
    del after["messages"][2]["content"][0]["cache_control"]  # the marker moves on
    after["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": "Sunny."}]},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Thanks", "cache_control": {"type": "ephemeral"}}],
        },
    ]
    assert diverged(before, after) is None
    after["messages"][0]["content"][0]["text"] = "Hello!"
    assert diverged(before, after) == "message 0"
    after["system"][0]["text"] = "You are long."
    assert diverged(before, after) == "system"


def test_bedrock_cache_points_and_gemini_system_instructions_are_understood() -> None:
    bedrock = {
        "toolConfig": {
            "tools": [{"toolSpec": {"name": "weather"}}, {"cachePoint": {"type": "default"}}]
        },
        "system": [{"text": "You are brief."}, {"cachePoint": {"type": "default"}}],
        "messages": [
            {"role": "user", "content": [{"text": "Hello"}, {"cachePoint": {"type": "default"}}]}
        ],
    }
    moved = copy.deepcopy(bedrock)
    moved["toolConfig"]["tools"].pop()
    moved["messages"][0]["content"].pop()
    moved["messages"].append({"role": "assistant", "content": [{"text": "Hi"}]})
    assert diverged(bedrock, moved) is None
    moved["toolConfig"]["tools"][0]["toolSpec"]["name"] = "forecast"
    assert diverged(bedrock, moved) == "tools"
    gemini = {
        "systemInstruction": {"parts": [{"text": "You are brief."}]},
        "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
    }
    edited = copy.deepcopy(gemini)
    edited["contents"][0]["parts"][0]["text"] = "Hello!"
    assert diverged(gemini, edited) == "message 0"
    edited["systemInstruction"]["parts"][0]["text"] = "You are long."
    assert diverged(gemini, edited) == "system"
    as_litellm_writes_it = {"system_instruction": gemini["systemInstruction"], "contents": []}
    assert fingerprint(as_litellm_writes_it).system == fingerprint(gemini).system


def test_breakpoints_are_listed_in_cache_order_with_their_lifetimes() -> None:
    hour, five = {"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral"}
    request = openai_request()
    request["tools"][-1]["cache_control"] = hour
    request["messages"][0] = {
        "role": "system",
        "content": [{"type": "text", "text": "x", "cache_control": hour}],
    }
    request["messages"][3] = {**request["messages"][3], "cache_control": five}
    found = [(p.segment, p.ttl) for p in breakpoints(request)]
    assert found == [("tools", "1h"), ("system", "1h"), ("message 3", "5m")]
    found = [(p.segment, p.ttl) for p in breakpoints(anthropic_body())]
    assert found == [("system", "5m"), ("message 2", "5m")]
