"""``apply_cache_breakpoints``: where the markers go, within the limit, without side effects."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from helix_stream.errors import InvalidRequestError
from helix_stream.models._cache import (
    CACHE_MARKER,
    PromptCacheMiddleware,
    apply_cache_breakpoints,
    count_cache_markers,
)

M = CACHE_MARKER
TOOLS = [
    {"type": "function", "function": {"name": "a", "parameters": {}}},
    {"type": "function", "function": {"name": "b", "parameters": {}}},
]


def params(messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"model": "anthropic/claude-sonnet-4-5", "messages": messages, "tools": TOOLS, **kw}


CONVERSATION = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "u1"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
    {"role": "tool", "tool_call_id": "c", "content": "r"},
    {"role": "user", "content": '<context kind="notice" source="app">\nx\n</context>'},
]


def test_auto_marks_last_message_previous_end_system_and_tools() -> None:
    before = copy.deepcopy(params(CONVERSATION))
    out = apply_cache_breakpoints(params(CONVERSATION), "anthropic")
    assert out["messages"] == [
        {"role": "system", "content": [{"type": "text", "text": "S", "cache_control": M}]},
        {"role": "user", "content": "u1", "cache_control": M},
        CONVERSATION[2],
        CONVERSATION[3],
        {**CONVERSATION[4], "cache_control": M},
    ]
    assert out["tools"] == [TOOLS[0], {**TOOLS[1], "cache_control": M}]
    assert count_cache_markers(out) == 4
    assert params(CONVERSATION) == before  # nothing was changed in place


def test_the_previous_end_is_the_message_before_the_last_assistant_message() -> None:
    convo = [*CONVERSATION[:4], {"role": "assistant", "content": "ok"}, CONVERSATION[4]]
    out = apply_cache_breakpoints(params(convo), "bedrock")
    assert out["messages"][3] == {**CONVERSATION[3], "cache_control": M}  # a tool result
    assert out["messages"][1] == CONVERSATION[1]


@pytest.mark.parametrize("family", ["openai", "gemini", "mistral", "other"])
def test_families_that_cache_by_themselves_get_no_markers(family: Any) -> None:
    assert apply_cache_breakpoints(params(CONVERSATION), family) == params(CONVERSATION)


def test_false_adds_nothing_and_bad_values_are_refused() -> None:
    assert apply_cache_breakpoints(params(CONVERSATION), "anthropic", False) == params(CONVERSATION)
    with pytest.raises(InvalidRequestError) as info:
        apply_cache_breakpoints(params(CONVERSATION), "anthropic", "always")  # type: ignore[arg-type]
    assert info.value.http_status == 400 and "prompt_cache" in str(info.value)


def test_markers_a_caller_placed_count_against_the_limit_and_stay() -> None:
    mine = [
        {"role": "system", "content": [{"type": "text", "text": "S", "cache_control": M}]},
        {"role": "user", "content": [{"type": "text", "text": "doc", "cache_control": M}]},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "q", "cache_control": M},
    ]
    out = apply_cache_breakpoints(params(mine), "anthropic")
    assert out["messages"] == mine
    assert out["tools"] == [TOOLS[0], {**TOOLS[1], "cache_control": M}]  # the one left
    assert count_cache_markers(out) == 4


def test_list_content_is_marked_on_its_last_part_and_empty_content_is_skipped() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
    convo = [
        {"role": "user", "content": [{"type": "text", "text": "see"}, image]},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": ""},
    ]
    out = apply_cache_breakpoints({"model": "m", "messages": convo}, "anthropic")
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "see"},
        {**image, "cache_control": M},
    ]
    assert out["messages"][2] == {"role": "user", "content": ""}
    assert "tools" not in out


async def test_the_middleware_reads_and_drops_a_prompt_cache_param() -> None:
    mw = PromptCacheMiddleware()
    off = await mw.transform_params(params(CONVERSATION, prompt_cache=False), stream=True)
    assert off == params(CONVERSATION)
    on = await mw.transform_params(params(CONVERSATION), stream=True)
    assert count_cache_markers(on) == 4 and "prompt_cache" not in on
    openai = await mw.transform_params(params(CONVERSATION, model="gpt-4o"), stream=True)
    assert openai == params(CONVERSATION, model="gpt-4o")
    with pytest.raises(InvalidRequestError):
        PromptCacheMiddleware("sometimes")  # type: ignore[arg-type]
