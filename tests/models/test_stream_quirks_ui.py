"""The quirk streams on the UI message stream, read by the AI SDK's own client (``ai@6``).

A Starlette app serves ``stream_text(...).to_sse_response()`` over the replayed bodies of
``_quirks.py`` (the direct reader, helix's default); the ``ai`` package's transport validates
every chunk with its ``uiMessageChunkSchema`` and folds the message. No chunk is rejected, and
the text and reasoning parts are what the provider sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import helix_stream as hs
from tests.conformance._client import ensure_ai, missing_node_reason, run_client, serve_app
from tests.models._quirks import QUIRKS
from tests.models._replay import ReplayServer

VERSION = 6


@pytest.fixture(scope="module")
def base_url(replay: ReplayServer) -> Iterator[str]:
    reason = missing_node_reason()
    if reason is not None:
        pytest.skip(reason)
    ensure_ai(VERSION)  # an npm failure raises: the test fails, it is not skipped

    async def chat(request: Request) -> Response:
        await request.body()
        result = hs.stream_text(**replay.llm(), prompt="Hello", stop_when=hs.step_count_is(1))
        return result.to_sse_response()

    with serve_app(Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])) as url:
        yield url


def _parts(result: dict[str, Any]) -> list[tuple[str, str]]:
    message = result["finalMessage"]
    return [(p["type"], p["text"]) for p in message["parts"] if p["type"] in ("text", "reasoning")]


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        (
            "content list: thinking and text blocks",
            [("reasoning", "The user asks for 2+2."), ("text", "2 + 2 = 4")],
        ),
        (
            "content list: thinking blocks, then text",
            [("reasoning", "Okay, the user asks."), ("text", "To cross, look both ways.")],
        ),
        ("a refusal delta", [("text", "I can't help with that.")]),
        ("nulls in every delta", [("reasoning", "We think about it."), ("text", "An answer.")]),
    ],
)
def test_the_ai_client_takes_every_chunk(
    replay: ReplayServer, base_url: str, name: str, parts: list[tuple[str, str]]
) -> None:
    replay.bodies.append(QUIRKS[name])
    body = {"id": "chat-1", "messages": [{"id": "u1", "role": "user", "parts": [
        {"type": "text", "text": "Hello"}]}]}  # fmt: skip
    result = run_client(f"{base_url}/api/chat", body, VERSION)
    assert result["error"] is None, result["errors"]
    assert _parts(result) == parts
    assert all(isinstance(c.get("delta", ""), str) for c in result["chunks"])
