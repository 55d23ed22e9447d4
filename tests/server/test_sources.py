"""Sources the model cites become ``source-url`` parts when the server sends sources."""

from __future__ import annotations

from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.transformers import to_ui_message_stream
from tests.loopback import LoopbackServer, Reply
from tests.server._asgi import sse_data
from tests.server.conftest import chat, user

CITED = Reply(
    deltas=[
        {"content": "See the docs."},
        {
            "annotations": [
                {"type": "url_citation", "url_citation": {"url": "https://a.example/docs",
                                                          "title": "Docs", "start_index": 4,
                                                          "end_index": 12}},
                {"type": "url_citation", "url_citation": {"url": "https://a.example/docs",
                                                          "title": "Docs again", "start_index": 0,
                                                          "end_index": 3}},
            ]
        },
        {"content": " And more.", "annotations": [
            {"type": "url_citation", "url_citation": {"url": "https://b.example/faq"}}]},
    ]
)  # fmt: skip
SOURCES = [
    {
        "type": "source-url",
        "sourceId": "source-0-1",
        "url": "https://a.example/docs",
        "title": "Docs",
    },
    {"type": "source-url", "sourceId": "source-0-2", "url": "https://b.example/faq"},
]


@pytest.mark.parametrize("send_sources", [True, False], ids=["on", "off"])
async def test_cited_urls_are_source_parts_once_each_and_stored(
    loopback: LoopbackServer, make_client: Any, send_sources: bool
) -> None:
    executor = hs.Executor()
    llm = loopback.llm()
    agent = hs.Agent(name="cites", model=llm.pop("model"), settings=llm)
    client = make_client(create_app(executor, agent, send_sources=send_sources))
    loopback.script(CITED)
    response = await client.post("/api/chat", json=chat("s", user("Where are the docs?")))
    chunks = [c for c in sse_data(response.content) if c != "[DONE]"]
    sources = [c for c in chunks if c["type"] == "source-url"]
    assert sources == (SOURCES if send_sources else [])
    stored = (await client.get("/api/chat/s/messages")).json()[-1]
    assert [p for p in stored["parts"] if p["type"] == "source-url"] == sources


async def test_a_raw_litellm_stream_sends_its_sources_too(loopback: LoopbackServer) -> None:
    import litellm

    loopback.script(CITED)
    stream = await litellm.acompletion(
        **loopback.llm(), messages=[{"role": "user", "content": "docs?"}], stream=True
    )
    ui = [c async for c in to_ui_message_stream(stream, send_sources=True)]
    assert [c for c in ui if c["type"] == "source-url"] == SOURCES
