"""A sub-agent's progress through the chat server: the SSE bytes an ``ai@7`` client reads, and
``GET .../messages`` after the turn (a reload shows the final output, not the progress)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import create_app
from tests._sub_agents import FINAL_OUTPUT, LAST_PROGRESS, lead_agent, script_turn
from tests.loopback import LoopbackServer
from tests.server._asgi import sse_data
from tests.server.conftest import chat, message_ids, user


@pytest.mark.parametrize("version", [5, 7], ids=["ai@5", "ai@7"])
async def test_the_stream_carries_progress_and_a_reload_shows_the_final_output(
    loopback: LoopbackServer, make_client: Any, version: int
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    app = create_app(
        executor,
        lead_agent(loopback, progress=True),
        client_version=version,
        generate_message_id=message_ids(),
    )
    client = make_client(app)
    script_turn(loopback)
    response = await client.post("/api/chat", json=chat("s1", user("Ask the researcher")))
    assert response.status_code == 200
    events = sse_data(response.content)
    progress = [e for e in events if isinstance(e, dict) and e.get("preliminary")]
    final = {"type": "tool-output-available", "toolCallId": "call_child", "output": FINAL_OUTPUT}
    assert final in events
    if version == 5:
        assert progress == [] and b"preliminary" not in response.content
    else:
        last = {
            "type": "tool-output-available",
            "toolCallId": "call_child",
            "output": LAST_PROGRESS,
            "preliminary": True,
        }
        assert progress[-1] == last
        # The bytes: compact JSON, one event each, the progress before the final output.
        wire = b"data: " + json.dumps(last, separators=(",", ":")).encode() + b"\n\n"
        assert wire in response.content
        assert events.index(progress[0]) < events.index(last) < events.index(final)
    stored = (await client.get("/api/chat/s1/messages")).json()
    [part] = [p for p in stored[-1]["parts"] if p.get("toolCallId") == "call_child"]
    assert part == {
        "type": "tool-ask",
        "toolCallId": "call_child",
        "state": "output-available",
        "input": {"prompt": "look it up"},
        "output": FINAL_OUTPUT,
    }


def test_a_tool_part_left_with_progress_is_not_read_as_a_client_s_answer() -> None:
    # A turn stopped while the sub-agent ran leaves the client's part with its progress.
    from helix_stream.server._bodies import ChatRequest, chat_actions

    part = {
        "type": "tool-ask",
        "toolCallId": "call_child",
        "state": "output-available",
        "input": {"prompt": "look"},
        "output": LAST_PROGRESS,
        "preliminary": True,
    }
    answer = {**part, "toolCallId": "call_app"}
    del answer["preliminary"]
    assistant = {"id": "a1", "role": "assistant", "parts": [part, answer]}
    body = ChatRequest.model_validate(chat("s1", user("Hi"), assistant, user("Again", id="u2")))
    assert [a.tool_call_id for a in chat_actions(body).tool_answers] == ["call_app"]
