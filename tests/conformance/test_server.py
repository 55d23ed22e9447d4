"""The real server (create_app on uvicorn) against the real AI SDK client: ai@5, ai@6, ai@7.

Each test drives ``POST /api/chat`` through the ``ai`` package's ``DefaultChatTransport`` (every
chunk validated by ``uiMessageChunkSchema``) and ``readUIMessageStream``, with litellm calling
the loopback model server: text, a tool round trip, a model error, a tool switched off through
``POST /context``, and a session with context rows (and a skipped step_context hook), whose
rows must reach the model and never the client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.transformers import read_ui_message
from tests.loopback import LoopbackServer, error, text, tool_calls
from tests.server._asgi import sse_data

from ._client import AI_VERSIONS, ensure_ai, missing_node_reason, run_client, serve_app

WEATHER = {"city": "Paris", "forecast": "sunny", "temp_c": 21}
RAN: list[str] = []


@hs.tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    RAN.append(city)
    return {**WEATHER, "city": city}


class Target(BaseModel):
    target: str


deploy = hs.tool(
    name="deploy",
    input_schema=Target,
    execute=lambda input: f"deployed {input.target}",
    needs_approval=True,
)


def _step_context(request: hs.StepContextRequest) -> None:
    # Sessions named "ctx-..." have a failing hook: the run goes on with a context_skipped chunk.
    if request.session_id.startswith("ctx-"):
        raise RuntimeError("the ticket feed is down")


@pytest.fixture(scope="module", params=AI_VERSIONS, ids=[f"ai@{v}" for v in AI_VERSIONS])
def server(
    request: pytest.FixtureRequest, _loopback_server: LoopbackServer
) -> Iterator[tuple[int, str]]:
    """(client major version, base URL) of a server made for that client version."""
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    version = int(request.param)
    ensure_ai(version)  # an npm failure raises: the test fails, it is not skipped
    agent = hs.Agent(
        name="conformance",
        system="You are a test.",
        model="openai/loopback",
        # ai@5 cannot answer approvals: a server for it refuses an agent that needs them.
        tools=[get_weather] if version == 5 else [get_weather, deploy],
        step_context=_step_context,
        settings={"api_base": _loopback_server.api_base, "api_key": "sk-loopback"},
    )
    app = create_app(hs.Executor(), agent, client_version=version)
    with serve_app(app) as base_url:
        yield version, base_url


def _user(text: str, id: str = "u1") -> dict[str, Any]:
    return {"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}


def _chat(server: tuple[int, str], session_id: str, *messages: dict[str, Any]) -> Any:
    version, base_url = server
    result = run_client(
        f"{base_url}/api/chat", {"id": session_id, "messages": list(messages)}, version
    )
    assert int(result["aiVersion"].split(".")[0]) == version
    return result


def _history(server: tuple[int, str], session_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{server[1]}/api/chat/{session_id}/messages", timeout=10)
    assert response.status_code == 200
    messages: list[dict[str, Any]] = response.json()
    return messages


def _add_context(server: tuple[int, str], session_id: str, items: list[Any]) -> None:
    body = {"sessionId": session_id, "items": items}
    response = httpx.post(f"{server[1]}/context", json=body, timeout=10)
    assert (response.status_code, response.json()) == (200, {"recorded": len(items)})


def test_text(server: tuple[int, str], loopback: LoopbackServer) -> None:
    sid = f"text-{server[0]}"
    loopback.script(text("Hello from the server!"))
    result = _chat(server, sid, _user("Hi"))
    assert result["error"] is None
    message_id = result["chunks"][0]["messageId"]
    assert result["finalMessage"] == {
        "id": message_id,
        "role": "assistant",
        "parts": [
            {"type": "step-start"},
            {"type": "text", "text": "Hello from the server!", "state": "done"},
        ],
    }
    # What the client holds is what the server hands back later (same id, same parts).
    assert _history(server, sid) == [_user("Hi"), result["finalMessage"]]


def test_tool_round_trip(server: tuple[int, str], loopback: LoopbackServer) -> None:
    sid = f"tool-{server[0]}"
    RAN.clear()
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("Sunny in Paris."))
    result = _chat(server, sid, _user("Weather in Paris?"))
    assert result["error"] is None
    assert RAN == ["Paris"]
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "tool-get_weather", "toolCallId": "call_0_get_weather",
         "state": "output-available", "input": {"city": "Paris"}, "output": WEATHER},
        {"type": "step-start"},
        {"type": "text", "text": "Sunny in Paris.", "state": "done"},
    ]  # fmt: skip
    assert _history(server, sid)[-1] == result["finalMessage"]


def test_a_model_error_is_masked(server: tuple[int, str], loopback: LoopbackServer) -> None:
    loopback.script(error(400, "upstream refused key sk-live-123 at 10.0.0.7"))
    result = _chat(server, f"error-{server[0]}", _user("Hi"))
    assert result["errors"] == [{"name": "Error", "message": "An error occurred."}]
    assert result["chunks"][-1] == {"type": "finish", "finishReason": "error"}
    assert "sk-live-123" not in json.dumps(result) and "10.0.0.7" not in json.dumps(result)


def test_a_tool_switched_off_through_context_is_not_executed(
    server: tuple[int, str], loopback: LoopbackServer
) -> None:
    sid = f"gated-{server[0]}"
    loopback.script(text("Hello."))
    assert _chat(server, sid, _user("Hi"))["error"] is None
    _add_context(server, sid, [hs.disable_tools(["get_weather"])])
    RAN.clear()
    loopback.script(tool_calls(("get_weather", {"city": "Paris"})), text("I cannot check."))
    result = _chat(server, sid, *_history(server, sid), _user("Weather in Paris?", "u2"))
    assert result["error"] is None
    assert RAN == []
    assert result["finalMessage"]["parts"][1] == {
        "type": "tool-get_weather",
        "toolCallId": "call_0_get_weather",
        "state": "output-available",
        "input": {"city": "Paris"},
        "output": {
            "notExecuted": True,
            "reason": "tool_inactive",
            "message": 'The tool "get_weather" is switched off in this conversation, '
            "so it was not run.",
        },
    }
    assert result["finalMessage"]["parts"][-1]["text"] == "I cannot check."


def test_context_rows_reach_the_model_and_never_the_client(
    server: tuple[int, str], loopback: LoopbackServer
) -> None:
    sid = f"ctx-{server[0]}"
    loopback.script(text("Hello."))
    assert _chat(server, sid, _user("Hi"))["error"] is None
    _add_context(server, sid, [hs.instruction("ROW-INSTRUCTION-41"), hs.notice("ROW-NOTICE-42")])
    loopback.script(text("Brief answer."))
    result = _chat(server, sid, *_history(server, sid), _user("Go on", "u2"))
    assert result["error"] is None
    assert result["finalMessage"]["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "Brief answer.", "state": "done"},
    ]
    assert "ROW-INSTRUCTION-41" in loopback.requests[-1].decode()  # the model got the rows

    # The raw bytes of a turn that commits a row (and whose hook is skipped) carry neither.
    _add_context(server, sid, [hs.notice("ROW-NOTICE-43")])
    loopback.script(text("Still brief."))
    body = {"id": sid, "messages": [*_history(server, sid), _user("More", "u3")]}
    raw = httpx.post(f"{server[1]}/api/chat", json=body, timeout=10).content
    assert raw.endswith(b"data: [DONE]\n\n")
    assert read_ui_message(sse_data(raw)[:-1])["parts"][-1]["text"] == "Still brief."
    assert "ROW-NOTICE-43" in loopback.requests[-1].decode()
    for forbidden in (b"context-row", b"context_skipped", b"ROW-", b"ticket feed"):
        assert forbidden not in raw
    assert "ROW-" not in json.dumps(_history(server, sid))


def test_an_approval_round_trip(server: tuple[int, str], loopback: LoopbackServer) -> None:
    version, _ = server
    if version == 5:  # ai@5 cannot show or answer an approval: such a server is refused
        agent = hs.Agent(name="approvals", model="helix/demo", tools=[deploy])
        with pytest.raises(ValueError, match=r"tools \['deploy'\] need approvals"):
            create_app(hs.Executor(), agent, client_version=5)
        return
    sid = f"approval-{version}"
    loopback.script(tool_calls(("deploy", {"target": "prod"})))
    first = _chat(server, sid, _user("Deploy to prod"))
    assert first["error"] is None
    asked = first["finalMessage"]
    assert asked["parts"][1]["state"] == "approval-requested"
    # What useChat holds after addToolApprovalResponse({id, approved: true}), sent back.
    approval = {**asked["parts"][1]["approval"], "approved": True}
    asked["parts"][1] = {**asked["parts"][1], "state": "approval-responded", "approval": approval}
    loopback.script(text("Deployed."))
    second = _chat(server, sid, _user("Deploy to prod"), asked)
    assert second["error"] is None
    final = second["finalMessage"]
    assert final["id"] == asked["id"]  # the same assistant message, continued
    assert final["parts"][1]["state"] == "output-available"
    assert final["parts"][1]["output"] == "deployed prod"
    assert final["parts"][-1] == {"type": "text", "text": "Deployed.", "state": "done"}
    assert [m["id"] for m in _history(server, sid)] == ["u1", asked["id"]]
