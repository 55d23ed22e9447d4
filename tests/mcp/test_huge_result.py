"""A 10 MB MCP tool result never breaks a session (issue 36 part 6, "Tool results have a size
limit"; README, "Reliability notes"): the chat server in a uvicorn process of its own, a
loopback model and ``bad_server.py``'s ``huge`` tool over stdio.

- the turn completes; the model's next request carries the result cut to
  ``max_tool_result_bytes`` with the notice (the bytes the loopback received);
- the page gets the cut result too (not 10 MB), and the app gets all of it (``action.result``);
- the session's next turn works, and sends the cut tool message byte for byte as before (the
  prompt cache keeps its prefix).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.loopback import LoopbackServer, text, tool_calls
from tests.mcp.conftest import NO_SDK, State
from tests.server._live import server_process
from tests.server.conftest import chat, user

pytest.importorskip("mcp", reason=NO_SDK)

BAD = Path(__file__).with_name("bad_server.py")
HUGE = 10 * 1024 * 1024
LIMIT = 100_000  # the default

APP = textwrap.dedent(
    """
    import json, sys, uvicorn
    import helix_stream as hs
    from helix_stream.server import create_app

    port, api_base, bad, state = sys.argv[1:5]

    async def keep(event, ctx):
        result = event.data["result"]
        with open(f"{state}/results", "a") as out:
            out.write(json.dumps([len(json.dumps(result.output)), result.cut_bytes]) + "\\n")

    server = hs.MCPServer.stdio(sys.executable, [bad], env={"HELIX_MCP_STATE": state}, name="bad")
    agent = hs.Agent(name="mcp", model="openai/loopback", tools=[server], max_retries=0,
                     settings={"api_base": api_base, "api_key": "k"},
                     hooks=[hs.define_hook(events={"action.result": keep})])
    app = create_app(hs.Executor(store=hs.SQLiteStore(f"{state}/chat.db")), agent)
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")
    """
)


def events(body: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: {")]


def through_tool_message(request: bytes) -> bytes:
    """A request's bytes up to the end of its tool message (the model and the messages)."""
    end = request.index(b"}", request.index(b"in this conversation.]")) + 1
    return request[:end]


def test_a_10_mb_mcp_result_is_cut_and_the_session_goes_on(
    state: State, loopback: LoopbackServer
) -> None:
    loopback.script(tool_calls(("bad__huge", {"text": "all of it"})), text("summed up"))
    with (
        server_process(APP, loopback.api_base, str(BAD), str(state.path)) as url,
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        first = client.post("/api/chat", json=chat("s", user("fetch it", id="u1")))
        assert first.status_code == 200
        got = events(first.text)
        assert got[-1]["type"] == "finish", got[-3:]
        assert len(first.content) < 2 * LIMIT  # the page got the cut result, not 10 MB
        (output,) = [e["output"] for e in got if e["type"] == "tool-output-available"]
        assert "The full result is available to the application" in output
        loopback.script(text("still here"))
        second = client.post("/api/chat", json=chat("s", user("and now?", id="u2")))
        assert second.status_code == 200 and events(second.text)[-1]["type"] == "finish"
        reloaded = client.get("/api/chat/s/messages").json()
    # What the model read: the first LIMIT bytes, then the notice.
    sent = loopback.bodies()[1]["messages"]
    (tool,) = [m for m in sent if m["role"] == "tool"]
    kept, notice = tool["content"].split("\n\n[", 1)
    assert len(kept.encode()) == LIMIT and kept == ("x" * 1023 + "\n") * 97 + "x" * 672
    cut = HUGE - LIMIT
    assert notice == (
        f"The tool's result was {HUGE:,} bytes, over the limit of {LIMIT:,} bytes: the last "
        f"{cut:,} bytes were cut here. The full result is available to the application, not "
        "in this conversation.]"
    )
    # The next turn sent what came before, the cut tool message included, byte for byte.
    _, after_the_call, next_turn = loopback.requests
    prefix = through_tool_message(after_the_call)
    assert next_turn.startswith(prefix) and len(prefix) < LIMIT + 2000
    assert all(len(request) < LIMIT + 5000 for request in loopback.requests)
    # The app got all of it (the action.result hook); the stored chat shows the cut one.
    ((size, cut_bytes),) = [json.loads(line) for line in state.lines("results")]
    assert cut_bytes == cut and size > HUGE
    parts = [p for m in reloaded if m["role"] == "assistant" for p in m["parts"]]
    assert [p["output"] for p in parts if p.get("state") == "output-available"] == [output]
