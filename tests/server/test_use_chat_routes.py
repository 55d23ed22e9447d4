"""useChat's controls through the HTTP routes: regenerate (with the rewind rules for context
rows), files, and the approval default."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from tests.server._asgi import sse_data
from tests.server.conftest import chat, user


def _texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (m["role"], "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text"))
        for m in messages
    ]


async def test_regenerate_remakes_the_turns_rows_once_and_keeps_one_answer(
    executor: hs.Executor, make_client: Any
) -> None:
    agent = hs.Agent(name="regen", model="helix/demo")
    client = make_client(create_app(executor, agent))
    await client.post("/api/chat", json=chat("s", user("one")))
    await executor.add_context("s", [hs.instruction("Answer in French.")])
    history = (await client.get("/api/chat/s/messages")).json()
    second = await client.post("/api/chat", json=chat("s", *history, user("two", "u2")))
    assert second.status_code == 200
    history = (await client.get("/api/chat/s/messages")).json()
    answer = history[-1]["id"]
    assert [r.content for r in await executor.context_rows("s")] == ["Answer in French."]
    body = chat("s", *history[:-1], trigger="regenerate-message", messageId=answer)
    again = await client.post("/api/chat", json=body)
    chunks = [c for c in sse_data(again.content) if c != "[DONE]"]
    assert chunks[0]["messageId"] != answer and chunks[-1] == {
        "type": "finish",
        "finishReason": "stop",
    }
    after = (await client.get("/api/chat/s/messages")).json()
    assert [m["id"] for m in after[:-1]] == [m["id"] for m in history[:-1]]
    assert after[-1]["id"] == chunks[0]["messageId"]  # exactly one answer: the new one
    # The rewind cut the instruction's row; the regenerated turn made it again, once.
    assert [r.content for r in await executor.context_rows("s")] == ["Answer in French."]
    assert "(Following the instruction: Answer in French.)" in _texts(after)[-1][1]


async def test_regenerate_while_running_is_409_and_writes_nothing(
    executor: hs.Executor, make_client: Any
) -> None:
    client = make_client(create_app(executor, hs.Agent(name="r", model="helix/demo")))
    await client.post("/api/chat", json=chat("s", user("one")))
    await executor.store.set_status("s", "running")
    before = await executor.store.read_snapshot("s")
    response = await client.post(
        "/api/chat", json=chat("s", user("one"), trigger="regenerate-message")
    )
    assert (response.status_code, response.json()["error"]["code"]) == (409, "state_session_busy")
    assert await executor.store.read_snapshot("s") == before


async def test_an_image_alone_is_accepted_and_stored_as_sent(
    executor: hs.Executor, make_client: Any
) -> None:
    client = make_client(create_app(executor, hs.Agent(name="img", model="helix/demo")))
    image = {"type": "file", "mediaType": "image/webp", "url": "https://example.com/x.webp"}
    message = {"id": "u1", "role": "user", "parts": [image]}
    response = await client.post("/api/chat", json=chat("s", message))
    assert response.status_code == 200
    [log_user] = [r for r in await executor.log("s") if r.role == "user"]
    assert log_user.payload["content"] == [
        {"type": "image_url", "image_url": {"url": "https://example.com/x.webp"}}
    ]
    stored = (await client.get("/api/chat/s/messages")).json()
    assert stored[0] == message


class Target(BaseModel):
    target: str


def test_the_default_client_is_ai7_and_ai5_is_refused_for_an_agent_with_approvals() -> None:
    deploy = hs.tool(
        name="deploy", input_schema=Target, execute=lambda t: "ok", needs_approval=True
    )
    agent = hs.Agent(name="ops", model="helix/demo", tools=[deploy])
    create_app(hs.Executor(), agent)  # the default (ai@7) serves approvals
    with pytest.raises(ValueError, match=r"client_version=5 cannot serve agent 'ops'"):
        create_app(hs.Executor(), agent, client_version=5)


async def test_a_tools_data_parts_are_streamed_and_the_kept_ones_stored(
    executor: hs.Executor, make_client: Any
) -> None:
    @hs.tool
    def get_weather(city: str, ctx: hs.ToolContext) -> str:
        """The weather in a city."""
        ctx.write_data("lookup", {"city": city, "state": "asking"}, id="w")
        ctx.write_data("lookup", {"city": city, "state": "done"}, id="w")
        ctx.write_data("debug", "not for keeps", transient=True)
        return "sunny"

    client = make_client(
        create_app(executor, hs.Agent(name="d", model="helix/demo", tools=[get_weather]))
    )
    response = await client.post("/api/chat", json=chat("s", user("weather in Paris?")))
    chunks = [c for c in sse_data(response.content) if c != "[DONE]"]
    data = [c for c in chunks if c["type"].startswith("data-")]
    assert data == [
        {"type": "data-lookup", "data": {"city": "Paris", "state": "asking"}, "id": "w"},
        {"type": "data-lookup", "data": {"city": "Paris", "state": "done"}, "id": "w"},
        {"type": "data-debug", "data": "not for keeps", "transient": True},
    ]
    output = next(i for i, c in enumerate(chunks) if c["type"] == "tool-output-available")
    assert chunks.index(data[-1]) < output  # what a tool writes comes before its output
    stored = (await client.get("/api/chat/s/messages")).json()[-1]
    assert [p for p in stored["parts"] if p["type"].startswith("data-")] == [
        {"type": "data-lookup", "id": "w", "data": {"city": "Paris", "state": "done"}}
    ]
