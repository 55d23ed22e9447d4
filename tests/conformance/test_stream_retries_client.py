"""Recovery mid-answer through a real chat server and the real ``ai@7`` client: what the
client shows and what the session stores are one answer, with nothing repeated."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import create_app
from tests.loopback import LoopbackServer, Reply

from ._client import ensure_ai, missing_node_reason, run_client, serve_app

WORDS = [f"word{i}" for i in range(60)]
ANSWER = " ".join(WORDS) + "."
USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Count to sixty."}]}


@pytest.fixture(scope="module")
def ai7() -> int:
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    ensure_ai(7)
    return 7


@pytest.fixture
def served(_loopback_server: LoopbackServer) -> Iterator[tuple[str, hs.Executor]]:
    executor = hs.Executor(store=hs.MemoryStore())
    settings = {"api_base": _loopback_server.anthropic_base, "api_key": "sk-loopback"}
    agent = hs.Agent(name="counter", model="anthropic/claude-sonnet-4-5", settings=settings)
    with serve_app(create_app(executor, agent, client_version=7)) as base_url:
        yield base_url, executor


def _texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["type"] == "text"]


def test_the_ai7_client_shows_one_continued_answer(
    ai7: int, served: tuple[str, hs.Executor], loopback: LoopbackServer
) -> None:
    base_url, executor = served
    cut = Reply(deltas=[{"content": w + " "} for w in WORDS], fail_after=40)
    rest = Reply(deltas=[{"content": " " + w} for w in WORDS[40:]] + [{"content": "."}])
    loopback.script(cut, rest)
    body = {"id": "s-cont", "messages": [USER], "trigger": "submit-message"}
    result = run_client(f"{base_url}/api/chat", body, ai7)
    assert result["error"] is None
    assert _texts(result["finalMessage"]) == [ANSWER]
    assert "reset-step" not in [c["type"] for c in result["chunks"]]
    stored = asyncio.run(executor.ui_messages("s-cont"))
    assert _texts(stored[-1]) == [ANSWER]
    assert stored[-1].get("metadata", {}).get("interrupted") is not True
    assert len(loopback.requests) == 2
