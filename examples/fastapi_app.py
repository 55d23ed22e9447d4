"""Mount helix_stream's chat routes in a FastAPI app, next to your own endpoints.

``fastapi_router(executor, agent, authenticate=..., authorize=...)`` is the chat routes as a
FastAPI ``APIRouter``: they are listed in ``/docs`` with their request bodies, and they answer
exactly as ``routes(...)`` does (the package reads and checks the bodies, errors keep their JSON
shape). ``lifespan`` imports litellm when the app starts, not while the first chat waits. The
app checks every caller (a bearer token here) and keeps each user to their own sessions (ids
``"<user>:<anything>"``) — the routes do not do that for you.

Needs FastAPI (``pip install fastapi``). Run it:

    python examples/fastapi_app.py            # http://127.0.0.1:8002 (try /docs)
    python examples/fastapi_app.py --once     # an offline self-check through httpx

Then, for example::

    curl -N localhost:8002/api/chat -H 'authorization: Bearer alice-token' \\
      -d '{"id": "alice:1", "messages": [{"id": "u1", "role": "user",
           "parts": [{"type": "text", "text": "What is the weather in Paris?"}]}]}'
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

import httpx
from fastapi import FastAPI
from starlette.requests import Request

import helix_stream as hs
from helix_stream.errors import AuthenticationError, PermissionDeniedError
from helix_stream.server import RunningTurns, fastapi_router, lifespan

TOKENS = {"alice-token": "alice", "bob-token": "bob"}  # your user store, in real life


@hs.tool
def get_weather(city: str) -> dict[str, Any]:
    """The current weather in a city."""
    return {"city": city, "forecast": "sunny", "temp_c": 21}


def authenticate(request: Request) -> str:
    """Who is calling: raise AuthenticationError (401) unless the token is known."""
    token = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
    if token not in TOKENS:
        raise AuthenticationError("send 'Authorization: Bearer <token>'")
    return TOKENS[token]


def authorize(user: str, session_id: str) -> None:
    """A user may only use their own sessions (PermissionDeniedError is a 403)."""
    if not session_id.startswith(f"{user}:"):
        raise PermissionDeniedError(f"session {session_id!r} does not belong to {user!r}")


executor = hs.Executor(store=hs.MemoryStore())  # hs.SQLiteStore("helix.db") to keep sessions
agent = hs.Agent(
    name="assistant", system="You are helpful.", model="helix/demo", tools=[get_weather]
)

# One RunningTurns for the routes and the lifespan: at shutdown (a deploy's SIGTERM) the lifespan
# ends the running turns as a stop does (stored as interrupted, sessions freed), then closes the
# executor.
turns = RunningTurns()
app = FastAPI(
    title="helix_stream in FastAPI",
    lifespan=partial(lifespan, turns=turns, executor=executor),
)


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


app.include_router(fastapi_router(executor, agent, authenticate, authorize=authorize, turns=turns))


async def run_once() -> list[str]:
    """Exercise the app in-process; return one line per step."""
    alice = {"authorization": "Bearer alice-token"}
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather in Paris?"}]}
    lines = []
    transport = httpx.ASGITransport(app=app)  # it runs no lifespan: run the app's here
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://example") as client,
    ):
        lines.append(f"health: {(await client.get('/health')).json()}")
        paths = (await client.get("/openapi.json")).json()["paths"]
        lines.append(f"documented: {' '.join(sorted(paths))}")
        body = {"id": "alice:1", "messages": [message]}
        chat = await client.post("/api/chat", json=body, headers=alice)
        types = [
            json.loads(x[6:])["type"] for x in chat.text.split("\n\n") if x.startswith("data: {")
        ]
        lines.append(f"chat: {chat.status_code} {' '.join(types)}")
        history = (await client.get("/api/chat/alice:1/messages", headers=alice)).json()
        lines.append(f"answer: {history[-1]['parts'][-1]['text']}")
        refused = await client.post("/api/chat", json=body)
        lines.append(f"no token: {refused.status_code} {refused.json()['error']['code']}")
        bob = {"authorization": "Bearer bob-token"}
        other = await client.get("/api/chat/alice:1/messages", headers=bob)
        lines.append(f"bob reads alice's chat: {other.status_code} {other.json()['error']['code']}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="an offline self-check, then exit")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8002)
    args = parser.parse_args(argv)
    if args.once:
        print("\n".join(asyncio.run(run_once())))
        return 0
    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
