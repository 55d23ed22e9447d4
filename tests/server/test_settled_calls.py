"""A call still waiting when the user sends a new message: its result belongs to the earlier
message. The new answer does not carry it; one transient ``data-tool-settled`` part says what
the earlier message's tool part becomes, and applied to the page's messages that gives what
``GET .../messages`` gives after a reload."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.transformers import read_ui_message
from tests.server._asgi import sse_data
from tests.server.conftest import chat, message_ids, user

CANCELLED = "cancelled: a new message was sent"


class Target(BaseModel):
    target: str


class Question(BaseModel):
    question: str


def apply_settled(messages: list[dict[str, Any]], part: dict[str, Any]) -> list[dict[str, Any]]:
    """The README's ``onData`` recipe, on a list of UIMessages."""
    message_id, call_id = part["data"]["messageId"], part["data"]["toolCallId"]
    update = {k: v for k, v in part["data"].items() if k not in ("messageId", "toolCallId")}

    def settle(message: dict[str, Any]) -> dict[str, Any]:
        parts = [{**p, **update} if p.get("toolCallId") == call_id else p for p in message["parts"]]
        return {**message, "parts": parts}

    return [settle(m) if m["id"] == message_id else m for m in messages]


def _about(chunks: list[Any], call: str) -> list[Any]:
    return [c for c in chunks if isinstance(c, dict) and call in str(c)]


async def _second_turn(
    client: Any, first_question: dict[str, Any], shown: dict[str, Any]
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Send a new message after ``shown``; return the stream and the page's messages after it."""
    new = user("Thanks, never mind", "u2")
    body = chat("s1", first_question, shown, new)
    second = sse_data((await client.post("/api/chat", json=body)).content)
    assert second[-1] == "[DONE]"
    page = [first_question, shown, new]
    for part in (c for c in second[:-1] if c["type"] == "data-tool-settled"):
        page = apply_settled(page, part)
    return second, [*page, read_ui_message(second[:-1])]


@pytest.mark.parametrize("version", [6, 7])
async def test_an_unanswered_approval_is_cancelled_on_its_own_message(
    executor: hs.Executor, make_client: Any, version: int
) -> None:
    ran: list[str] = []
    tool = hs.tool(
        name="deploy",
        input_schema=Target,
        execute=lambda t: ran.append(t.target) or "deployed",
        needs_approval=True,
    )
    agent = hs.Agent(name="ops", model="helix/demo", tools=[tool])
    client = make_client(create_app(executor, agent, client_version=version,
                                    generate_message_id=message_ids()))  # fmt: skip
    question = user("Please deploy to Production")
    first = sse_data((await client.post("/api/chat", json=chat("s1", question))).content)
    shown = read_ui_message(first[:-1])
    call = "call_demo_1_0_deploy"
    assert shown["parts"][1]["state"] == "approval-requested"

    second, page = await _second_turn(client, question, shown)
    # The new answer carries nothing of the call but the part that settles it elsewhere.
    assert _about(second, call) == [
        {
            "type": "data-tool-settled",
            "data": {"messageId": "msg-1", "toolCallId": call, "state": "output-error",
                     "errorText": CANCELLED},
            "transient": True,
        }
    ]  # fmt: skip
    assert second[0] == {"type": "start", "messageId": "msg-2"}
    assert ran == []
    # The page after the answer is what a reload shows: the same messages, the same parts.
    stored = (await client.get("/api/chat/s1/messages")).json()
    assert stored == page
    assert stored[1]["parts"][1]["state"] == "output-error"
    assert stored[1]["parts"][1]["errorText"] == CANCELLED
    assert [p["type"] for p in stored[3]["parts"]] == ["step-start", "text"]
    # The model was told the call was cancelled (the stored tool message, as before).
    log = (await executor.store.read_snapshot("s1")).log
    [tool_message] = [r.payload for r in log if r.role == "tool"]
    assert tool_message["content"] == (
        '{"status": "cancelled", "message": "No approval came before the next message."}'
    )


async def test_an_approval_answered_with_a_new_message_runs_and_shows_on_its_message(
    executor: hs.Executor, make_client: Any
) -> None:
    tool = hs.tool(
        name="deploy", input_schema=Target, execute=lambda t: f"deployed {t.target}",
        needs_approval=True,
    )  # fmt: skip
    agent = hs.Agent(name="ops", model="helix/demo", tools=[tool])
    client = make_client(create_app(executor, agent, generate_message_id=message_ids()))
    question = user("Please deploy to Production")
    first = sse_data((await client.post("/api/chat", json=chat("s1", question))).content)
    shown = read_ui_message(first[:-1])
    # The user clicked Approve, but the page sent nothing until the next message.
    approval = {**shown["parts"][1]["approval"], "approved": True}
    shown["parts"][1] = {**shown["parts"][1], "state": "approval-responded", "approval": approval}

    second, page = await _second_turn(client, question, shown)
    [settled] = _about(second, "call_demo_1_0_deploy")
    assert settled["data"] == {
        "messageId": "msg-1",
        "toolCallId": "call_demo_1_0_deploy",
        "state": "output-available",
        "output": "deployed Production",
    }
    # A stored message keeps the approval's id, not the answer the page gave it (as for a
    # continued turn): the rest is the same.
    page[1]["parts"][1]["approval"] = {"id": approval["id"]}
    assert (await client.get("/api/chat/s1/messages")).json() == page


async def test_an_unanswered_client_tool_is_cancelled_on_its_own_message_for_ai5(
    executor: hs.Executor, make_client: Any
) -> None:
    ask_user = hs.tool(name="ask_user", input_schema=Question)  # no execute: the client answers
    agent = hs.Agent(name="planner", model="helix/demo", tools=[ask_user])
    app = create_app(executor, agent, client_version=5, generate_message_id=message_ids())
    client = make_client(app)
    question = user('Please ask the user "Which city?"')
    first = sse_data((await client.post("/api/chat", json=chat("s1", question))).content)
    shown = read_ui_message(first[:-1])
    assert shown["parts"][1]["state"] == "input-available"

    second, page = await _second_turn(client, question, shown)
    [settled] = _about(second, "call_demo_1_0_ask_user")
    assert settled["data"]["state"] == "output-error"
    assert settled["data"]["errorText"] == CANCELLED
    assert (await client.get("/api/chat/s1/messages")).json() == page
