"""A client that goes away mid-stream: through a real uvicorn socket, with each
``on_disconnect``."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx

import helix_stream as hs
from helix_stream.server import StreamRegistry, create_app
from tests.conformance._client import serve_app
from tests.loopback import LoopbackServer, text
from tests.server.conftest import chat, user


def _setup(loopback: LoopbackServer, tmp_path: Path) -> tuple[hs.Executor, hs.Agent]:
    executor = hs.Executor(store=hs.SQLiteStore(str(tmp_path / "sessions.db")))
    agent = hs.Agent(
        name="loopback",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "sk-loopback"},
    )
    return executor, agent


async def test_with_on_disconnect_cancel_a_disconnect_closes_the_model_stream(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    executor, agent = _setup(loopback, tmp_path)
    registry = StreamRegistry()
    # The model sends some text, then keeps its stream open until its client leaves.
    loopback.script(text("Once upon a time", hang=True))
    try:
        app = create_app(executor, agent, streams=registry, on_disconnect="cancel")
        with serve_app(app) as base_url:
            seen: list[dict[str, object]] = []
            async with (
                httpx.AsyncClient(timeout=10) as client,
                client.stream(
                    "POST", f"{base_url}/api/chat", json=chat("s1", user("Tell a story"))
                ) as response,
            ):
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith("data: {"):
                        seen.append(json.loads(line[6:]))
                    if seen and seen[-1]["type"] == "text-delta":
                        break  # leave mid-stream: the connection is closed here
            assert (await executor.session("s1")).status in ("running", "idle")
            deadline = time.monotonic() + 10
            while (loopback.disconnects, (await executor.session("s1")).status) != (1, "idle"):
                assert time.monotonic() < deadline, (loopback.disconnects, loopback.open_streams)
                await asyncio.sleep(0.05)
            assert loopback.open_streams == 0
            assert len(registry) == 0
        assert len(loopback.requests) == 1  # one model call, cancelled; nothing retried it
        assert [c["type"] for c in seen][:2] == ["start", "start-step"]
        # What the user saw before leaving is stored, marked interrupted.
        messages = await executor.ui_messages("s1")
        assert [m["role"] for m in messages] == ["user", "assistant"]
        shown = "".join(c["delta"] for c in seen if c["type"] == "text-delta")
        assert messages[1]["parts"][-1]["text"].startswith(shown)
        assert messages[1]["metadata"] == {"interrupted": True}
    finally:
        await executor.store.close()


async def test_a_reload_mid_answer_resumes_the_rest_from_a_new_connection(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    executor, agent = _setup(loopback, tmp_path)
    story = "Once upon a time there was a server that kept on talking."
    loopback.script(text(story, pieces=12, delay=0.1))
    try:
        with serve_app(create_app(executor, agent)) as base_url:  # on_disconnect="continue"
            async with httpx.AsyncClient(timeout=10) as client:
                async with client.stream(
                    "POST", f"{base_url}/api/chat", json=chat("s1", user("Tell a story"))
                ) as response:
                    async for line in response.aiter_lines():
                        if line.startswith('data: {"type":"text-delta"'):
                            break  # a reload: this connection is closed here
                resumed = await client.get(f"{base_url}/api/chat/s1/stream")
            assert resumed.status_code == 200
            seen = [json.loads(x[6:]) for x in resumed.text.split("\n\n") if x[6:7] == "{"]
            assert seen[0]["type"] == "start"  # a replay from the start, then live to the end
            assert "".join(c["delta"] for c in seen if c["type"] == "text-delta") == story
            assert seen[-1] == {"type": "finish", "finishReason": "stop"}
        assert loopback.disconnects == 0  # the model stream was never cut
        messages = await executor.ui_messages("s1")
        assert messages[1]["parts"][-1]["text"] == story
        assert "metadata" not in messages[1]
    finally:
        await executor.store.close()
