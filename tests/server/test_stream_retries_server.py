"""The chat server and ``stream_retries``: one retry by default; an ``ai@7`` client gets a
redone step as ``reset-step``, an older client the failure (never a glued answer)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.transformers import read_ui_message
from tests.loopback import LoopbackServer, Reply
from tests.server.conftest import chat, user

Client = Callable[[Any], httpx.AsyncClient]
WORDS = [f"word{i}" for i in range(60)]
ANSWER = " ".join(WORDS)

pytestmark = pytest.mark.usefixtures("warm_loopback")


def _events(body: str) -> list[dict[str, Any]]:
    lines = [line[6:] for line in body.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def _mistral_agent(loopback: LoopbackServer) -> hs.Agent:
    """An agent of a family without prefill (Mistral's wire is OpenAI's: the loopback)."""
    settings = {"api_base": loopback.api_base, "api_key": "sk-loopback"}
    return hs.Agent(name="m", model="mistral/mistral-large-latest", settings=settings)


def _cut_then_redo(loopback: LoopbackServer) -> None:
    cut = Reply(deltas=[{"content": w + " "} for w in WORDS[:40]], midstream_error="overloaded")
    whole = Reply(deltas=[{"content": w + " "} for w in WORDS[:-1]] + [{"content": WORDS[-1]}])
    loopback.script(cut, whole)


async def test_an_ai7_chat_gets_the_redone_step_and_stores_one_answer(
    loopback: LoopbackServer, make_client: Client
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    client = make_client(create_app(executor, _mistral_agent(loopback), client_version=7))
    _cut_then_redo(loopback)
    response = await client.post("/api/chat", json=chat("s1", user("count")))
    events = _events(response.text)
    assert [e["type"] for e in events].count("reset-step") == 1
    assert "error" not in [e["type"] for e in events]
    shown = read_ui_message(events)
    assert [p["text"] for p in shown["parts"] if p["type"] == "text"] == [ANSWER]
    stored = await executor.ui_messages("s1")
    assert [p["text"] for p in stored[-1]["parts"] if p["type"] == "text"] == [ANSWER]
    assert len(loopback.requests) == 2


async def test_an_older_client_gets_the_failure_and_no_redo(
    loopback: LoopbackServer, make_client: Client
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    client = make_client(create_app(executor, _mistral_agent(loopback), client_version=6))
    _cut_then_redo(loopback)
    response = await client.post("/api/chat", json=chat("s1", user("count")))
    events = _events(response.text)
    kinds = [e["type"] for e in events]
    assert "reset-step" not in kinds and "error" in kinds
    assert len(loopback.requests) == 1  # no redo was tried: the client could not drop parts
    stored = await executor.ui_messages("s1")
    assert stored[-1]["metadata"] == {"interrupted": True, "error": "model_unavailable"}
    assert [p["text"] for p in stored[-1]["parts"] if p["type"] == "text"] == [
        " ".join(WORDS[:40]) + " "
    ]
    loopback.reset()
