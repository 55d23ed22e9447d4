"""A tool's images in the tool message, and each family's form of them (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest

from helix_stream.loop._tool_media import render_tool_media, tool_content

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def call(call_id: str) -> dict[str, Any]:
    function = {"name": "shot", "arguments": "{}"}
    return {"id": call_id, "type": "function", "function": function}


def step(*tool_messages: dict[str, Any]) -> list[dict[str, Any]]:
    ids = [m["tool_call_id"] for m in tool_messages]
    assistant = {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]}
    return [{"role": "user", "content": "go"}, assistant, *tool_messages]


def test_content_parts_with_an_image_stay_parts_and_without_one_become_text() -> None:
    assert tool_content([{"type": "text", "text": "a"}, IMAGE]) == [
        {"type": "text", "text": "a"},
        IMAGE,
    ]
    assert tool_content([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "a\nb"
    # Anything else is JSON, as before.
    assert tool_content([{"type": "image", "mime_type": "image/png"}]) == (
        '[{"type": "image", "mime_type": "image/png"}]'
    )
    assert tool_content([]) == "[]"


@pytest.mark.parametrize("family", ["anthropic", "bedrock"])
def test_families_whose_tool_results_take_images_get_the_message_as_it_is(family: Any) -> None:
    messages = step({"role": "tool", "tool_call_id": "c1", "content": [IMAGE]})
    assert render_tool_media(messages, family) == messages


@pytest.mark.parametrize("family", ["openai", "gemini", "mistral", "other"])
def test_one_user_message_after_the_steps_tool_messages_carries_the_images(family: Any) -> None:
    messages = step(
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}, IMAGE]},
        {"role": "tool", "tool_call_id": "c2", "content": "plain"},
        {"role": "tool", "tool_call_id": "c3", "content": [IMAGE, IMAGE]},
    )
    out = render_tool_media([*messages, {"role": "assistant", "content": "seen"}], family)
    assert [m["role"] for m in out] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "user",
        "assistant",
    ]
    assert out[2]["content"] == "a\n[image 1: in the next user message, from call c1]"
    assert out[4]["content"] == (
        "[image 1: in the next user message, from call c3]\n"
        "[image 2: in the next user message, from call c3]"
    )
    assert [p["type"] for p in out[5]["content"]] == [
        "text",
        "image_url",
        "text",
        "image_url",
        "image_url",
    ]
    assert "c1" in out[5]["content"][0]["text"] and "c3" in out[5]["content"][2]["text"]
    # The same stored messages render to the same bytes every time.
    assert render_tool_media(messages, family) == render_tool_media(messages, family)


def test_litellm_turns_the_kept_parts_into_bedrock_image_blocks() -> None:
    # Bedrock Converse has no loopback server here: litellm's own translation of the message
    # helix sends is what reaches the wire.
    from litellm.litellm_core_utils.prompt_templates.factory import (
        _bedrock_converse_messages_pt,
    )

    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}}
    tool = {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}, image]}
    sent = render_tool_media(step(tool), "bedrock")
    converse = _bedrock_converse_messages_pt(sent, "anthropic.claude-3", "bedrock")
    (result,) = [b["toolResult"] for m in converse for b in m["content"] if "toolResult" in b]
    assert result["toolUseId"] == "c1"
    assert result["content"][0] == {"text": "a"}
    assert result["content"][1]["image"]["format"] == "png"
    assert result["content"][1]["image"]["source"]["bytes"] == png
