"""An MCP tool's image and embedded resource reach the model as content parts: image blocks in
the tool result on Anthropic's wire format, the tool's text plus a user message of images on
OpenAI's; text resources as text. The session's log keeps them (``ui_messages`` shows them), and
each later request starts with the earlier one's bytes."""

from __future__ import annotations

import base64
import json
import sys
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the MCP tests need the mcp package: pip install 'helix-stream[mcp]'"
)

import helix_stream as hs
from helix_stream.testing import ScriptedModel
from tests.loopback import LoopbackServer, text, tool_calls

from .conftest import stdio_args
from .server_app import PNG

DATA_URL = "data:image/png;base64," + base64.b64encode(PNG).decode()
IMAGE = {"type": "image_url", "image_url": {"url": DATA_URL}}
REPORT = "summary\nfile:///report.txt\nall good"  # a text block and a text resource


def demo_server(stdio_env: dict[str, str]) -> hs.MCPServer:
    return hs.MCPServer.stdio(sys.executable, stdio_args(), env=stdio_env, name="demo")


async def turn(executor: hs.Executor, agent: hs.Agent, sid: str, prompt: str) -> list[Any]:
    chunks = [c async for c in executor.run(agent, sid, prompt)]
    assert not [c for c in chunks if c.type == "error"]
    return chunks


def tool_parts(messages: list[Any]) -> dict[str, Any]:
    """The outputs of the tool parts of stored UI messages, by call id."""
    return {
        part["toolCallId"]: part.get("output")
        for message in messages
        for part in message["parts"]
        if str(part.get("type", "")).startswith("tool-")
    }


async def test_openai_gets_the_tool_text_then_a_user_message_of_images(
    stdio_env: dict[str, str], loopback: LoopbackServer
) -> None:
    server = demo_server(stdio_env)
    agent = hs.Agent(
        name="media",
        model="openai/loopback",
        tools=[server],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )
    executor = hs.Executor(hs.MemoryStore())
    loopback.script(
        tool_calls(("demo__chart", {}), ("demo__report", {})), text("a chart"), text("again")
    )
    try:
        chunks = await turn(executor, agent, "s1", "show me")
        await turn(executor, agent, "s1", "once more")
        stored = await executor.ui_messages("s1")
    finally:
        await executor.close()
    outputs = {c.tool_call_id: c.output for c in chunks if c.type == "tool-output-available"}
    chart, report = "call_0_demo__chart", "call_1_demo__report"
    assert outputs == {
        chart: [IMAGE],
        report: [
            {"type": "text", "text": "summary"},
            {"type": "text", "text": "file:///report.txt\nall good"},
        ],
    }
    raw = loopback.requests
    assert len(raw) == 3
    sent = json.loads(raw[1])["messages"]
    assert sent[-3:] == [
        {
            "role": "tool",
            "tool_call_id": chart,
            "content": f"[image 1: in the next user message, from call {chart}]",
        },
        {"role": "tool", "tool_call_id": report, "content": REPORT},
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": f"The images tool call {chart} returned (the tool's output, "
                    "not the user's):",
                },
                IMAGE,
            ],
        },
    ]
    # The next turn is rendered from the stored log: its request starts with this one's bytes.
    turn_one = raw[1][: raw[1].index(b'],"tools":')]
    assert raw[2].startswith(turn_one)
    # GET .../messages shows what the tools returned, the image included.
    assert tool_parts(stored)[chart] == [IMAGE]


async def test_anthropic_gets_image_blocks_inside_the_tool_result(
    stdio_env: dict[str, str],
) -> None:
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "demo__chart", "arguments": {}, "id": "toolu_1"}]},
            {"text": "a chart"},
            {"text": "again"},
        ],
        wire="anthropic",
    )
    agent = hs.Agent(name="media", model=model, tools=[demo_server(stdio_env)])
    executor = hs.Executor(hs.MemoryStore())
    try:
        await turn(executor, agent, "s1", "show me")
        await turn(executor, agent, "s1", "once more")
    finally:
        await executor.close()
        model.close()
    _first, second, third = model.requests
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    encoded = base64.b64encode(PNG).decode()
    source = {"type": "base64", "media_type": "image/png", "data": encoded}
    assert [p for p in result["content"] if p["type"] == "image"] == [
        {"type": "image", "source": source}
    ]
    # The next turn starts with this request's messages, the same bytes but for the cache
    # markers, which move to the newest messages by design (README, "Prompt caching").
    earlier = unmarked(second["messages"])
    assert unmarked(third["messages"])[: len(earlier)] == earlier


def unmarked(messages: list[Any]) -> list[str]:
    """Each message's JSON without Anthropic's ``cache_control`` markers."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [json.dumps(strip(m)) for m in messages]


async def test_get_messages_shows_the_tools_image_over_http(
    stdio_env: dict[str, str], loopback: LoopbackServer
) -> None:
    from helix_stream.server import create_app
    from tests.server.conftest import chat, client, user

    agent = hs.Agent(
        name="media",
        model="openai/loopback",
        tools=[demo_server(stdio_env)],
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )
    executor = hs.Executor(store=hs.MemoryStore())
    app = create_app(executor, agent)
    loopback.script(tool_calls(("demo__chart", {})), text("a chart"))
    async with app.router.lifespan_context(app), client(app) as http:
        posted = await http.post("/api/chat", json=chat("s1", user("show me", id="u1")))
        assert posted.status_code == 200
        got = await http.get("/api/chat/s1/messages")
    assert got.status_code == 200
    assert tool_parts(got.json()) == {"call_0_demo__chart": [IMAGE]}
