"""The chat server's routes through httpx.ASGITransport: chat SSE, tools, approvals, client
tools, context, messages, authentication identity and mounting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request

import helix_stream as hs
from helix_stream.errors import AuthenticationError
from helix_stream.server import create_app, routes
from helix_stream.session._meta import TurnMeta
from helix_stream.transformers import UI_MESSAGE_STREAM_HEADERS, read_ui_message
from tests.server._asgi import sse_data
from tests.server.conftest import chat, message_ids, user

WEATHER_OUTPUT = {"city": "Paris", "forecast": "sunny", "temp_c": 21}
WEATHER_TEXT = 'Done: get_weather returned {"city": "Paris", "forecast": "sunny", "temp_c": 21}.'


def _text(id: str, *deltas: str) -> list[dict[str, Any]]:
    return [
        {"type": "text-start", "id": id},
        *({"type": "text-delta", "id": id, "delta": d} for d in deltas),
        {"type": "text-end", "id": id},
    ]


async def test_chat_streams_the_answer_as_the_ai_sdk_ui_message_stream(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    app = create_app(executor, agent, generate_message_id=message_ids())
    response = await make_client(app).post("/api/chat", json=chat("s1", user("Hello there")))
    assert response.status_code == 200
    assert {k: response.headers[k] for k in UI_MESSAGE_STREAM_HEADERS} == dict(
        UI_MESSAGE_STREAM_HEADERS
    )
    assert sse_data(response.content) == [
        {"type": "start", "messageId": "msg-1"},
        {"type": "start-step"},
        *_text("text-0", "You ", "said: ", "Hello ", "there"),
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
        "[DONE]",
    ]
    assert response.content.endswith(b"data: [DONE]\n\n")


async def test_a_tool_round_trip_and_the_messages_route_agree_on_ids(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent, generate_message_id=message_ids()))
    body = chat("s1", user("What is the weather in Paris?", id="u-client-1"))
    response = await client.post("/api/chat", json=body)
    call = "call_demo_1_0_get_weather"
    assert sse_data(response.content) == [
        {"type": "start", "messageId": "msg-1"},
        {"type": "start-step"},
        {"type": "tool-input-start", "toolCallId": call, "toolName": "get_weather"},
        {"type": "tool-input-delta", "toolCallId": call, "inputTextDelta": '{"city": "Paris"}'},
        {"type": "tool-input-available", "toolCallId": call, "toolName": "get_weather",
         "input": {"city": "Paris"}},
        {"type": "tool-output-available", "toolCallId": call, "output": WEATHER_OUTPUT},
        {"type": "finish-step"},
        {"type": "start-step"},
        *_text("text-1", "Done: ", "get_weather ", "returned ", '{"city": ', '"Paris", ',
               '"forecast": ', '"sunny", ', '"temp_c": ', "21}."),
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
        "[DONE]",
    ]  # fmt: skip
    streamed = read_ui_message([c for c in sse_data(response.content) if c != "[DONE]"])
    stored = (await client.get("/api/chat/s1/messages")).json()
    # The user message keeps the client's id; the assistant message the id `start` announced.
    assert stored == [
        {"id": "u-client-1", "role": "user",
         "parts": [{"type": "text", "text": "What is the weather in Paris?"}]},
        {"id": "msg-1", "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-get_weather", "toolCallId": call, "state": "output-available",
             "input": {"city": "Paris"}, "output": WEATHER_OUTPUT},
            {"type": "step-start"},
            {"type": "text", "text": WEATHER_TEXT, "state": "done"},
        ]},
    ]  # fmt: skip
    assert stored[1] == streamed


async def test_context_steers_the_next_turn_and_never_shows_in_messages(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent, generate_message_id=message_ids()))
    await client.post("/api/chat", json=chat("s1", user("Hi")))
    item = {"kind": "instruction", "content": "Answer in French."}
    request = {"sessionId": "s1", "items": [item], "key": "lang-1"}
    first = await client.post("/context", json=request)
    assert (first.status_code, first.json()) == (200, {"recorded": 1})
    retry = await client.post("/context", json=request)  # same key, same items: nothing new
    assert (retry.status_code, retry.json()) == (200, {"recorded": 0})
    history = (await client.get("/api/chat/s1/messages")).json()
    response = await client.post("/api/chat", json=chat("s1", *history, user("Bonjour", "u2")))
    text = read_ui_message([c for c in sse_data(response.content) if c != "[DONE]"])["parts"][-1]
    assert text["text"] == "You said: Bonjour (Following the instruction: Answer in French.)"
    messages = (await client.get("/api/chat/s1/messages")).json()
    assert [(m["id"], m["role"]) for m in messages] == [
        ("u1", "user"), ("msg-1", "assistant"), ("u2", "user"), ("msg-2", "assistant"),
    ]  # fmt: skip
    assert [r.kind for r in await executor.context_rows("s1")] == ["instruction"]
    assert "context" not in json.dumps(messages)


def _readme_context_body() -> dict[str, Any]:
    guide = (Path(__file__).resolve().parents[2] / "docs/guides/serving.md").read_text()
    after = guide.split("The body of `POST /context` carries", 1)[1]
    return json.loads(after.split("```json\n", 1)[1].split("```", 1)[0])


async def test_the_readme_context_body_is_accepted_with_one_row_per_kind(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    client = make_client(create_app(executor, agent))
    body = _readme_context_body()
    await client.post("/api/chat", json=chat(body["sessionId"], user("Hi")))
    response = await client.post("/context", json=body)
    # The README's tools items name web_search, which this agent lacks: recorded, with a warning.
    warnings = ["unknown tool 'web_search'"]
    assert (response.status_code, response.json()) == (200, {"recorded": 5, "warnings": warnings})
    await client.post("/api/chat", json=chat(body["sessionId"], user("Hi again", "u2")))
    rows = await executor.context_rows(body["sessionId"])
    assert [(r.kind, r.source) for r in rows] == [
        ("instruction", "app"), ("notice", "app"), ("tools", "app"), ("tools", "app"),
        ("memory", "app"),
    ]  # fmt: skip


class Target(BaseModel):
    target: str


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
async def test_an_approval_comes_back_in_the_chat_body(
    executor: hs.Executor, make_client: Any, approved: bool
) -> None:
    ran: list[str] = []

    def deploy(input: Target) -> str:
        ran.append(input.target)
        return f"deployed {input.target}"

    tool = hs.tool(name="deploy", input_schema=Target, execute=deploy, needs_approval=True)
    agent = hs.Agent(name="ops", model="helix/demo", tools=[tool])
    app = create_app(executor, agent, client_version=6, generate_message_id=message_ids())
    client = make_client(app)
    question = user("Please deploy to Production")
    first = sse_data((await client.post("/api/chat", json=chat("s1", question))).content)
    call = "call_demo_1_0_deploy"
    assert first[-4:] == [
        {"type": "tool-approval-request", "approvalId": f"approval-{call}", "toolCallId": call},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "tool-calls"},
        "[DONE]",
    ]
    assert (await executor.session("s1")).status == "paused" and ran == []

    # What useChat (ai@6) holds after addToolApprovalResponse, sent back as it is.
    shown = read_ui_message(first[:-1])
    assert shown["parts"][1]["state"] == "approval-requested"
    answer = {"id": f"approval-{call}", "approved": approved}
    if not approved:
        answer["reason"] = "not on a Friday"
    shown["parts"][1] = {**shown["parts"][1], "state": "approval-responded", "approval": answer}
    second = sse_data((await client.post("/api/chat", json=chat("s1", question, shown))).content)

    assert second[0] == {"type": "start", "messageId": "msg-1"}  # the same message, continued
    final = read_ui_message(second[:-1], message=shown)
    tool_part = final["parts"][1]
    if approved:
        assert ran == ["Production"]
        assert (tool_part["state"], tool_part["output"]) == (
            "output-available",
            "deployed Production",
        )
        assert final["parts"][-1]["text"] == "Done: deploy returned deployed Production."
    else:
        assert ran == []
        assert tool_part["state"] == "output-denied"
        assert {"type": "tool-output-denied", "toolCallId": call} in second
    stored = (await client.get("/api/chat/s1/messages")).json()
    assert [m["id"] for m in stored] == ["u1", "msg-1"]
    assert stored[1]["parts"][1]["state"] == tool_part["state"]
    assert (await executor.session("s1")).status == "idle"


class Question(BaseModel):
    question: str


async def test_a_client_tool_output_comes_back_in_the_chat_body(
    executor: hs.Executor, make_client: Any
) -> None:
    ask_user = hs.tool(name="ask_user", input_schema=Question)  # no execute: the client answers
    agent = hs.Agent(name="planner", model="helix/demo", tools=[ask_user])
    client = make_client(create_app(executor, agent, generate_message_id=message_ids()))
    question = user('Please ask the user "Which city?"')
    first = sse_data((await client.post("/api/chat", json=chat("s1", question))).content)
    call = "call_demo_1_0_ask_user"
    assert {"type": "tool-input-available", "toolCallId": call, "toolName": "ask_user",
            "input": {"question": "Which city?"}} in first  # fmt: skip
    assert (await executor.session("s1")).status == "paused"

    shown = read_ui_message(first[:-1])
    shown["parts"][1] = {
        **shown["parts"][1],
        "state": "output-available",
        "output": {"city": "Oslo"},
    }
    second = sse_data((await client.post("/api/chat", json=chat("s1", question, shown))).content)
    assert second[0] == {"type": "start", "messageId": "msg-1"}
    assert {
        "type": "tool-output-available",
        "toolCallId": call,
        "output": {"city": "Oslo"},
    } in second
    final = read_ui_message(second[:-1], message=shown)
    assert final["parts"][-1]["text"] == 'Done: ask_user returned {"city": "Oslo"}.'

    # The whole history goes back with every later message, answered call included: it must not
    # be answered again (it would become a late-answer notice row).
    third = await client.post("/api/chat", json=chat("s1", question, final, user("Thanks", "u2")))
    assert third.status_code == 200
    assert await executor.context_rows("s1") == []
    assert [m["id"] for m in (await client.get("/api/chat/s1/messages")).json()] == [
        "u1", "msg-1", "u2", "msg-2",
    ]  # fmt: skip


class Tenant(BaseModel):
    name: str


async def test_the_authenticated_identity_and_run_options_reach_the_run(
    executor: hs.Executor, make_client: Any
) -> None:
    @hs.tool(context_schema=Tenant)
    def whoami(ctx: hs.ToolContext) -> dict[str, Any]:
        """Who is asking, and for which tenant."""
        return {"auth": hs.current_session().auth.current, "tenant": ctx.context.name}

    async def authenticate(request: Request) -> str:  # async is fine too
        token = request.headers.get("authorization", "")
        if not token.startswith("Bearer "):
            raise AuthenticationError("send Authorization: Bearer <user>")
        return token.removeprefix("Bearer ")

    def run_options(request: Request, auth: Any) -> dict[str, Any]:
        return {"tools_context": {"whoami": {"name": f"tenant-of-{auth}"}}}

    agent = hs.Agent(name="auth", model="helix/demo", tools=[whoami])
    app = create_app(executor, agent, authenticate, run_options=run_options)
    client = make_client(app)
    response = await client.post(
        "/api/chat", json=chat("s1", user("whoami")), headers={"authorization": "Bearer user-7"}
    )
    outputs = [c for c in sse_data(response.content) if c != "[DONE]"]
    assert {"type": "tool-output-available", "toolCallId": "call_demo_1_0_whoami",
            "output": {"auth": "user-7", "tenant": "tenant-of-user-7"}} in outputs  # fmt: skip
    stored = await executor.store.get_session("s1")
    assert stored is not None and TurnMeta.read(stored.meta).initiator == "user-7"
    assert (await executor.session("s1")).meta == {}  # the app's meta: the engine's keys apart


async def test_routes_mount_in_an_existing_app_under_other_paths(
    executor: hs.Executor, agent: hs.Agent, make_client: Any
) -> None:
    app = Starlette(
        routes=routes(executor, agent, api_path="/v2/chat/", context_path="/v2/context")
    )
    client = make_client(app)
    response = await client.post("/v2/chat", json=chat("s9", user("Hi")))
    assert sse_data(response.content)[-2:] == [{"type": "finish", "finishReason": "stop"}, "[DONE]"]
    assert (await client.post("/v2/context", json={"sessionId": "s9", "items": []})).json() == {
        "recorded": 0
    }
    assert [m["role"] for m in (await client.get("/v2/chat/s9/messages")).json()] == [
        "user", "assistant",
    ]  # fmt: skip
    assert (await client.get("/v2/chat/s9/stream")).status_code == 204


def test_create_app_refuses_an_unknown_client_version(
    executor: hs.Executor, agent: hs.Agent
) -> None:
    with pytest.raises(ValueError, match="client_version must be 5, 6 or 7"):
        create_app(executor, agent, client_version=4)
