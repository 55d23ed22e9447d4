"""The ``ai`` package's own chat (``AbstractChat``, what ``useChat`` wraps) against the server:
regenerate, files and images, and a stream that fails mid-answer. What the chat holds must be
what ``GET .../messages`` gives back."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from tests.conformance._client import (
    AI_VERSIONS,
    ensure_ai,
    missing_node_reason,
    run_chat,
    serve_app,
)
from tests.loopback import LoopbackServer, text, tool_calls

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()
PDF = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4 fake").decode()


@hs.tool
async def index_files(count: int, ctx: hs.ToolContext) -> str:
    """Index some files, reporting progress."""
    for done in range(1, count + 1):
        ctx.write_data("progress", {"done": done, "of": count}, id="index")
    ctx.write_data("status", "indexing finished", transient=True)
    return f"indexed {count}"


class Target(BaseModel):
    target: str


# Waits for an approval (ai@6 and later); ai@5 cannot answer approvals, so for it a client tool.
deploy = hs.tool(
    name="deploy",
    input_schema=Target,
    execute=lambda t: f"deployed {t.target}",
    needs_approval=True,
)
ask_user = hs.tool(name="ask_user", input_schema=Target)  # no execute: the client answers


@pytest.fixture(scope="module", params=AI_VERSIONS, ids=[f"ai@{v}" for v in AI_VERSIONS])
def server(
    request: pytest.FixtureRequest, _loopback_server: LoopbackServer
) -> Iterator[tuple[int, str]]:
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    version = int(request.param)
    ensure_ai(version)
    agent = hs.Agent(
        name="use-chat",
        model="openai/loopback",
        tools=[index_files, ask_user] + ([deploy] if version >= 6 else []),
        settings={"api_base": _loopback_server.api_base, "api_key": "sk-loopback"},
        # What a failure stores and shows (recovery mid-answer: test_stream_retries.py).
        stream_retries=0,
    )
    with serve_app(create_app(hs.Executor(), agent, client_version=version)) as base_url:
        yield version, base_url


def _chat(server: tuple[int, str], sid: str, *actions: dict[str, Any]) -> list[dict[str, Any]]:
    version, base_url = server
    result = run_chat(f"{base_url}/api/chat", {"id": sid, "actions": list(actions)}, version)
    assert int(result["aiVersion"].split(".")[0]) == version
    steps: list[dict[str, Any]] = result["steps"]
    return steps


def _stored(server: tuple[int, str], sid: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{server[1]}/api/chat/{sid}/messages", timeout=10)
    assert response.status_code == 200
    messages: list[dict[str, Any]] = response.json()
    return messages


def _texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (m["role"], "".join(p.get("text", "") for p in m["parts"] if p["type"] == "text"))
        for m in messages
    ]


def test_regenerate_replaces_the_last_answer_and_an_earlier_one_truncates(
    server: tuple[int, str], loopback: LoopbackServer
) -> None:
    sid = f"regen-{server[0]}"
    loopback.script(
        text("first answer"), text("second answer"), text("second, again"), text("first, again")
    )
    steps = _chat(
        server,
        sid,
        {"send": {"text": "one"}},
        {"send": {"text": "two"}},
        {"regenerate": {}},
        {"regenerate": {"index": 1}},  # an earlier answer: what follows it goes too
    )
    assert all(step.get("error") is None for step in steps), steps
    final = steps[2]["messages"]
    assert _texts(final) == [
        ("user", "one"), ("assistant", "first answer"), ("user", "two"), ("assistant", "second, again"),
    ]  # fmt: skip
    assert final[-1]["id"] != steps[1]["messages"][-1]["id"]  # a new message
    # The model was asked again with the conversation up to "two": the old answer is gone.
    regenerated = json.loads(loopback.requests[-2])["messages"]
    assert [m["content"] for m in regenerated] == ["one", "first answer", "two"]
    truncated = steps[3]["messages"]
    assert _texts(truncated) == [("user", "one"), ("assistant", "first, again")]
    assert _stored(server, sid) == truncated


def test_files_and_images_reach_the_model_and_come_back_stored(
    server: tuple[int, str], loopback: LoopbackServer
) -> None:
    sid = f"files-{server[0]}"
    image = {"type": "file", "mediaType": "image/png", "url": PNG, "filename": "a.png"}
    pdf = {"type": "file", "mediaType": "application/pdf", "url": PDF, "filename": "b.pdf"}
    remote = {"type": "file", "mediaType": "image/jpeg", "url": "https://example.com/c.jpg"}
    loopback.script(text("I see them."), text("Only an image."))
    steps = _chat(
        server,
        sid,
        {"send": {"text": "What are these?", "files": [image, pdf]}},
        {"send": {"files": [remote]}},  # an image alone, no text
    )
    assert [step.get("error") for step in steps] == [None, None]
    sent = [json.loads(body)["messages"] for body in loopback.requests[-2:]]
    # The content parts in the order the client sent the UI parts (useChat puts files first).
    assert sent[0][-1]["content"] == [
        {"type": "image_url", "image_url": {"url": PNG}},
        # litellm leaves out `format` on OpenAI's wire (it is for providers that need it)
        {"type": "file", "file": {"file_data": PDF, "filename": "b.pdf"}},
        {"type": "text", "text": "What are these?"},
    ]
    assert sent[1][-1]["content"] == [
        {"type": "image_url", "image_url": {"url": "https://example.com/c.jpg"}}
    ]
    stored = _stored(server, sid)
    assert stored == steps[-1]["messages"]  # the files come back as the user sent them
    assert [p["type"] for p in stored[0]["parts"]] == ["file", "file", "text"]


def test_an_answer_cut_by_a_model_failure_is_stored_as_the_user_saw_it(
    server: tuple[int, str], loopback: LoopbackServer
) -> None:
    sid = f"cut-{server[0]}"
    loopback.script(text("Once upon a time", midstream_error="overloaded"), text("Go on? Sure."))
    steps = _chat(server, sid, {"send": {"text": "Tell a story"}}, {"send": {"text": "Go on"}})
    assert steps[0]["error"] is not None  # the client saw the failure...
    seen = steps[0]["messages"]
    assert _texts(seen) == [("user", "Tell a story"), ("assistant", "Once upon a time")]
    # The chat stops reading at `error`: the server ended the text part before it, so the
    # part the chat holds is done, not "streaming" for good.
    assert seen[1]["parts"][-1] == {"type": "text", "text": "Once upon a time", "state": "done"}
    stored = _stored(server, sid)
    assert _texts(stored) == _texts(steps[1]["messages"])
    assert stored[1]["metadata"] == {"interrupted": True, "error": "model_unavailable"}
    # ...and the next request alternates: user, assistant (the partial answer), user.
    roles = [m["role"] for m in json.loads(loopback.requests[-1])["messages"]]
    assert roles == ["user", "assistant", "user"]


def test_a_tools_data_parts_stream_replace_by_id_and_transient_ones_are_not_kept(
    server: tuple[int, str], loopback: LoopbackServer
) -> None:
    sid = f"data-{server[0]}"
    loopback.script(tool_calls(("index_files", {"count": 3})), text("Done."))
    steps = _chat(server, sid, {"send": {"text": "Index them"}})
    assert steps[0]["error"] is None
    answer = steps[0]["messages"][-1]
    data = [p for p in answer["parts"] if p["type"].startswith("data-")]
    assert data == [{"type": "data-progress", "id": "index", "data": {"done": 3, "of": 3}}]
    assert _stored(server, sid)[-1] == answer


def test_a_call_left_waiting_then_a_new_message_shows_the_same_after_a_reload(
    server: tuple[int, str], loopback: LoopbackServer
) -> None:
    version = server[0]
    sid = f"left-{version}"
    waiting = "deploy" if version >= 6 else "ask_user"
    loopback.script(tool_calls((waiting, {"target": "prod"})), text("Something else, then."))
    steps = _chat(
        server, sid, {"send": {"text": "Deploy to prod"}}, {"send": {"text": "Never mind"}}
    )
    assert [step.get("error") for step in steps] == [None, None]
    asked = steps[0]["messages"][1]["parts"][1]
    assert asked["state"] == ("approval-requested" if version >= 6 else "input-available")
    shown = steps[1]["messages"]
    # The call ended on its own message, readable and without a pending state (no buttons);
    # the new answer holds only its text.
    assert _texts(shown) == [
        ("user", "Deploy to prod"), ("assistant", ""), ("user", "Never mind"),
        ("assistant", "Something else, then."),
    ]  # fmt: skip
    part = shown[1]["parts"][1]
    assert (part["state"], part["errorText"]) == (
        "output-error",
        "cancelled: a new message was sent",
    )
    assert [p["type"] for p in shown[3]["parts"]] == ["step-start", "text"]
    # A reload shows the same messages, the same parts.
    assert _stored(server, sid) == shown
