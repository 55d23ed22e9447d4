"""A refusal is decided before anything is written: a regenerate whose run is refused, and a
``continue`` on a session that waits for nothing (never assistant after assistant)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from tests.server._asgi import sse_data
from tests.server.conftest import chat, user


class Tenant(BaseModel):
    name: str


@hs.tool(context_schema=Tenant)
def whoami(ctx: hs.ToolContext) -> str:
    """Who is asking."""
    return str(ctx.context.name)


def _run_options(request: Any, auth: Any) -> dict[str, Any]:
    tenant = request.headers.get("x-tenant")
    return {"tools_context": {"whoami": {"name": tenant}}} if tenant else {}


def _roles(messages: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in messages]


async def test_a_regenerate_whose_run_is_refused_writes_nothing(
    executor: hs.Executor, make_client: Any
) -> None:
    agent = hs.Agent(name="t", model="helix/demo", tools=[whoami])
    client = make_client(create_app(executor, agent, run_options=_run_options))
    tenant = {"x-tenant": "acme"}
    assert (await client.post("/api/chat", json=chat("s", user("Hi")), headers=tenant)).is_success
    history = (await client.get("/api/chat/s/messages")).json()
    answer = history[-1]["id"]
    before = await executor.store.read_snapshot("s")
    body = chat("s", *history[:-1], trigger="regenerate-message", messageId=answer)
    refused = await client.post("/api/chat", json=body)  # no x-tenant: no tools_context
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "validation_error"
    assert "tools_context" in refused.json()["error"]["message"]
    assert await executor.store.read_snapshot("s") == before
    assert [m["id"] for m in (await client.get("/api/chat/s/messages")).json()] == [
        m["id"] for m in history
    ]
    # The same regenerate with its context runs, and leaves one answer.
    again = await client.post("/api/chat", json=body, headers=tenant)
    assert again.status_code == 200 and sse_data(again.content)[-1] == "[DONE]"
    after = (await client.get("/api/chat/s/messages")).json()
    assert _roles(after) == ["user", "assistant"] and after[-1]["id"] != answer


async def test_continue_on_a_session_that_waits_for_nothing_is_a_400_and_writes_nothing(
    executor: hs.Executor, make_client: Any
) -> None:
    agent = hs.Agent(name="c", model="helix/demo")
    client = make_client(create_app(executor, agent))
    assert (await client.post("/api/chat", json=chat("s", user("Hi")))).is_success
    history = (await client.get("/api/chat/s/messages")).json()
    assert _roles(history) == ["user", "assistant"]
    before = await executor.store.read_snapshot("s")
    refused = await client.post("/api/chat", json=chat("s", *history))  # last: the assistant's
    assert refused.status_code == 400, refused.text
    problem = refused.json()["error"]
    assert problem["code"] == "invalid_request" and "waits for nothing" in problem["message"]
    assert await executor.store.read_snapshot("s") == before
    # The Python API refuses the same, before writing.
    result = executor.run(agent, "s")
    await result.consume()
    assert isinstance(result.error, hs.InvalidRequestError)
    assert await executor.store.read_snapshot("s") == before
    # A user message still works, and the log never holds assistant after assistant.
    assert (await client.post("/api/chat", json=chat("s", *history, user("More", "u2")))).is_success
    roles = [r.role for r in await executor.log("s") if r.role != "context"]
    assert roles == ["user", "assistant", "user", "assistant"]


async def test_continue_after_a_regenerate_rewind_answers_the_user_message(
    executor: hs.Executor,
) -> None:
    """A run without input after ``regenerate()`` (the log ends with the user's message) is
    not waiting for nothing: it answers that message."""
    agent = hs.Agent(name="c", model="helix/demo")
    await executor.run(agent, "s", "Hi").consume()
    await executor.regenerate("s")
    result = executor.run(agent, "s")
    await result.consume()
    assert result.error is None
    roles = [r.role for r in await executor.log("s") if r.role != "context"]
    assert roles == ["user", "assistant"]


class Target(BaseModel):
    target: str


async def test_continue_with_an_approval_still_runs_the_paused_turn(
    executor: hs.Executor, make_client: Any
) -> None:
    deploy = hs.tool(
        name="deploy", input_schema=Target, execute=lambda t: "deployed", needs_approval=True
    )
    agent = hs.Agent(name="ops", model="helix/demo", tools=[deploy])
    client = make_client(create_app(executor, agent))
    first = await client.post("/api/chat", json=chat("s", user("use deploy with target=prod")))
    request = next(
        x for x in sse_data(first.content) if isinstance(x, dict)
        and x["type"] == "tool-approval-request"
    )  # fmt: skip
    assert (await executor.session("s")).status == "paused"
    history = (await client.get("/api/chat/s/messages")).json()
    last = history[-1]
    for part in last["parts"]:
        if part.get("toolCallId") == request["toolCallId"]:
            part["state"] = "approval-responded"
            part["approval"] = {"id": request["approvalId"], "approved": True}
    answered = await client.post("/api/chat", json=chat("s", *history[:-1], last))
    assert answered.status_code == 200, answered.text
    outputs = [
        x for x in sse_data(answered.content)
        if isinstance(x, dict) and x["type"] == "tool-output-available"
    ]  # fmt: skip
    assert [o["output"] for o in outputs] == ["deployed"]
    assert (await executor.session("s")).status == "idle"
