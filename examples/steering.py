"""Steer a running agent from your app with ``POST /context``.

While a turn runs, the app adds an instruction to the session; the context pass commits it as a
context row before the agent's *next* model call, so the rest of the turn follows it — without
touching the system prompt (the request prefix, and the provider's prompt cache, stay as they
were) and without the chat ever showing the row.

Run it:

    python examples/steering.py            # http://127.0.0.1:8004, then steer it with curl:
        curl localhost:8004/context -d '{"sessionId": "s1",
             "items": [{"kind": "instruction", "content": "Answer in French."}]}'
    python examples/steering.py --once     # an offline run: steer mid-turn, print the answer

``helix/demo-slow`` (the embedded offline model) appends "(Following the instruction: ...)" to
its answers when an instruction row is in its context, so you can watch it work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

import httpx

import helix_stream as hs
from helix_stream.server import create_app

busy = asyncio.Event()  # set while the research tool runs (how --once knows the turn is mid-way)


@hs.tool
async def research(topic: str) -> str:
    """Research a topic (slowly)."""
    busy.set()
    await asyncio.sleep(0.5)
    return f"three sources agree on {topic}"


executor = hs.Executor()
agent = hs.Agent(
    name="researcher", system="You research topics.", model="helix/demo-slow", tools=[research]
)
# No authenticate here: POST /context steers any session. Check the caller in a real app.
app = create_app(executor, agent)


async def run_once() -> str:
    """Start a turn, steer it while its tool runs, return the turn's final text."""
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Research Mars"}]}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://example") as client:
        turn = asyncio.create_task(
            client.post("/api/chat", json={"id": "s1", "messages": [message]})
        )
        await busy.wait()  # the agent is in its tool: its next model call is still to come
        steer = {"sessionId": "s1", "items": [hs.instruction("Answer in one sentence.")]}
        recorded = (await client.post("/context", json=steer)).json()
        response = await turn
    chunks = [json.loads(x[6:]) for x in response.text.split("\n\n") if x.startswith("data: {")]
    text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
    return f"POST /context -> {json.dumps(recorded)}\nanswer: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="an offline run, then exit")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8004)
    args = parser.parse_args(argv)
    if args.once:
        print(asyncio.run(run_once()))
        return 0
    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
