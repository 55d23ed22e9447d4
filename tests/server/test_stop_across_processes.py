"""A stop posted to one server process ends the turn running in another (issue 36 part 4):
two real uvicorn processes sharing one PostgreSQL store (README, "Reliability notes").

Replica A streams a slow answer (the loopback model keeps its stream open after the first
words); ``POST /api/chat/{id}/stop`` goes to replica B, which has no such turn in its own
process and asks through the store (``Executor.request_stop``); A's lease heartbeat reads the
request and stops its turn. A's stream ends by itself with its interrupted mark (``abort``, then
``[DONE]``), the stored answer is the text streamed so far marked interrupted, and the session
takes the next chat on either process. Skipped, with the reason, without a PostgreSQL server.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.loopback import LoopbackServer, text
from tests.server.test_process_death import Place, Server, chat, chat_until_text, stored
from tests.store import _pg


async def test_a_stop_sent_to_replica_b_stops_the_turn_running_on_replica_a(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    place = Place("postgres", tmp_path)  # skips, with the reason, without a server
    replicas: list[Server] = []
    try:
        replicas.append(a := Server(place, loopback, tmp_path))
        replicas.append(b := Server(place, loopback, tmp_path))
        loopback.script(text("a slow partial answer", pieces=4, hang=True))
        client, response, lines = chat_until_text(a.url, "stopped")
        started = time.monotonic()
        stop = httpx.post(f"{b.url}/api/chat/stopped/stop", timeout=30)
        assert (stop.status_code, stop.json()) == (200, {"stopped": True})
        # A's stream ends by itself (nobody closes it): the rest of its lines, then the end.
        data = [line[6:] for line in lines if line.startswith("data: ")]
        took = time.monotonic() - started
        response.close()
        client.close()
        assert data[-1] == "[DONE]" and data.count("[DONE]") == 1, data
        rest = [json.loads(item) for item in data[:-1]]
        assert rest[-1] == {"type": "abort", "reason": "stopped"}, rest
        assert "finish" not in [event["type"] for event in rest]
        assert took < 10, f"the stop took {took:.1f} s"
        status, messages = await stored(place, "stopped")
        assert status == "idle"
        assert [(role, interrupted) for role, _, interrupted in messages] == [
            ("user", False),
            ("assistant", True),
        ]
        partial = messages[1][1]
        assert partial and "a slow partial answer".startswith(partial)
        # Nothing runs any more: a second stop, on either replica, has nothing to stop.
        for replica in (a, b):
            again = httpx.post(f"{replica.url}/api/chat/stopped/stop", timeout=30)
            assert again.json() == {"stopped": False}
        # The session is usable on either process.
        loopback.script(text("answered on b"))
        assert chat(b.url, "stopped", "second")[1][-1] == "finish"
        loopback.script(text("answered on a"))
        assert chat(a.url, "stopped", "third")[1][-1] == "finish"
        status, messages = await stored(place, "stopped")
        assert status == "idle"
        assert [(role, content) for role, content, _ in messages[2:]] == [
            ("user", "second"),
            ("assistant", "answered on b"),
            ("user", "third"),
            ("assistant", "answered on a"),
        ]
    finally:
        for replica in replicas:
            replica.end()
        _pg.drop_schemas()
