"""Fixtures for the server tests: an executor on a MemoryStore, a demo-model agent, a client."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

import helix_stream as hs


@hs.tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "forecast": "sunny", "temp_c": 21}


def user(text: str, id: str = "u1") -> dict[str, Any]:
    """A user UIMessage as useChat sends it."""
    return {"id": id, "role": "user", "parts": [{"type": "text", "text": text}]}


def chat(session_id: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A useChat request body."""
    return {"id": session_id, "messages": list(messages), "trigger": "submit-message", **extra}


def message_ids(prefix: str = "msg") -> Callable[[], str]:
    """A predictable ``generate_message_id``: msg-1, msg-2, ..."""
    counter = itertools.count(1)
    return lambda: f"{prefix}-{next(counter)}"


@pytest.fixture
def executor() -> hs.Executor:
    return hs.Executor(store=hs.MemoryStore())


@pytest.fixture
def agent() -> hs.Agent:
    return hs.Agent(
        name="server-test", system="You are a test.", model="helix/demo", tools=[get_weather]
    )


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://testserver")


@pytest.fixture
async def make_client() -> AsyncIterator[Callable[[Any], httpx.AsyncClient]]:
    opened: list[httpx.AsyncClient] = []

    def make(app: Any) -> httpx.AsyncClient:
        c = client(app)
        opened.append(c)
        return c

    yield make
    for c in opened:
        await c.aclose()
