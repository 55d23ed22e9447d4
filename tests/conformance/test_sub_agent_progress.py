"""A sub-agent's progress against the real ``ai`` client: ``ai@6`` and ``ai@7`` accept the
preliminary tool outputs (every chunk validated by the package's schema) and fold them into the
tool part (``preliminary: true``, the growing output) until the final output replaces them;
``ai@5`` gets none and still reads the turn."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import helix_stream as hs
from helix_stream.server import create_app
from tests._sub_agents import FINAL_OUTPUT, LAST_PROGRESS, lead_agent, script_turn
from tests.loopback import LoopbackServer

from ._client import AI_VERSIONS, missing_node_reason, run_chat, run_client, serve_app


def _user(text: str) -> dict[str, Any]:
    return {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}


@pytest.mark.parametrize("version", AI_VERSIONS, ids=[f"ai@{v}" for v in AI_VERSIONS])
def test_the_client_folds_the_progress_then_the_final_output(
    loopback: LoopbackServer, version: int
) -> None:
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    app = create_app(
        hs.Executor(store=hs.MemoryStore()),
        lead_agent(loopback, progress=True),
        client_version=version,
    )
    script_turn(loopback)
    with serve_app(app) as base_url:
        result = run_client(
            f"{base_url}/api/chat",
            {"id": f"progress-{version}", "messages": [_user("Ask")]},
            version,
        )
    assert result["error"] is None, result["errors"]
    [part] = [p for p in result["finalMessage"]["parts"] if p.get("toolCallId") == "call_child"]
    assert (part["type"], part["state"], part["output"]) == (
        "tool-ask",
        "output-available",
        FINAL_OUTPUT,
    )
    assert "preliminary" not in part  # the final output ended the progress
    sent = [c for c in result["chunks"] if c.get("preliminary")]
    folded = result["preliminaryParts"]
    if version == 5:
        assert sent == [] and folded == []
        return
    assert sent and sent[-1]["output"] == LAST_PROGRESS
    # The client's own fold: the tool part showed each progress value as it came.
    assert [p["output"] for p in folded] == [c["output"] for c in sent]
    assert {(p["state"], p["toolCallId"]) for p in folded} == {("output-available", "call_child")}


@pytest.mark.parametrize("version", [6, 7], ids=["ai@6", "ai@7"])
def test_the_chat_that_use_chat_wraps_ends_with_the_stored_message(
    loopback: LoopbackServer, version: int
) -> None:
    """``AbstractChat`` (useChat's state machine) takes the progress without an error and ends
    with the message ``GET .../messages`` gives after a reload."""
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    app = create_app(
        hs.Executor(store=hs.MemoryStore()),
        lead_agent(loopback, progress=True),
        client_version=version,
    )
    script_turn(loopback)
    sid = f"chat-progress-{version}"
    with serve_app(app) as base_url:
        result = run_chat(
            f"{base_url}/api/chat", {"id": sid, "actions": [{"send": {"text": "Ask"}}]}, version
        )
        stored = httpx.get(f"{base_url}/api/chat/{sid}/messages").json()
    [step] = result["steps"]
    assert (step["status"], step["error"]) == ("ready", None)
    live = step["messages"][-1]
    [part] = [p for p in live["parts"] if p.get("toolCallId") == "call_child"]
    assert (part["state"], part["output"], "preliminary" in part) == (
        "output-available",
        FINAL_OUTPUT,
        False,
    )
    assert [p for p in live["parts"] if p["type"] != "step-start"] == [
        p for p in stored[-1]["parts"] if p["type"] != "step-start"
    ]
