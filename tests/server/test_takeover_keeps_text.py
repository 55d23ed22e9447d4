"""Takeover keeps what was said (issue 36 part 3): a uvicorn process is SIGKILLed mid-answer;
the turn that takes the session over (a restarted process on PostgreSQL, whose stream log holds
the dead turn's stream) stores what the dead turn had streamed as the interrupted answer — what
the user saw before the crash is what a reload shows. On SQLite (no shared stream log) the
interrupted answer stays empty."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx

from tests.loopback import LoopbackServer, text
from tests.server.test_process_death import (
    Place,
    Server,
    chat_until_taken_over,
    chat_until_text,
    place,  # noqa: F401  (the fixtures: sqlite and postgres)
    servers,  # noqa: F401
    stored,
)


async def test_the_takeover_stores_the_dead_turns_streamed_text(
    place: Place,  # noqa: F811
    servers: list[Server],  # noqa: F811
    loopback: LoopbackServer,
    tmp_path: Path,
) -> None:
    loopback.script(text("what the user saw", pieces=4, hang=True))
    servers.append(first := Server(place, loopback, tmp_path))
    client, response, _ = chat_until_text(first.url, "kept")
    time.sleep(0.6)  # the stream's events are published every 0.2 s
    first.process.send_signal(signal.SIGKILL)
    first.process.wait(timeout=20)
    response.close()
    client.close()
    servers.append(again := Server(place, loopback, tmp_path))
    loopback.script(text("after the crash"))
    _, types = chat_until_taken_over(again.url, "kept")
    assert "finish" in types
    _, messages = await stored(place, "kept")
    said = "what the user saw" if place.kind == "postgres" else ""
    assert [(role, content) for role, content, _ in messages] == [
        ("user", "first"),
        ("assistant", said),
        ("user", "second"),
        ("assistant", "after the crash"),
    ]
    assert messages[1][2]  # interrupted
    shown = httpx.get(f"{again.url}/api/chat/kept/messages", timeout=10).json()
    assert shown[1]["metadata"] == {"interrupted": True}
    assert [p.get("text") for p in shown[1]["parts"] if p["type"] == "text"] == (
        [said] if said else []
    )
