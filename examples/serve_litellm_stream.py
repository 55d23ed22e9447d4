"""Serve an existing ``litellm.acompletion(..., stream=True)`` call to ``useChat``, in one call.

You already call litellm with ``stream=True``; wrap the stream and return it::

    return UIMessageStreamResponse(to_ui_message_stream(stream))

and the Vercel AI SDK's ``useChat`` (``ai`` v5, v6 or v7, default ``api: "/api/chat"``) reads it.
No agent, no session, no store: just the wire protocol.

Run it:

    python examples/serve_litellm_stream.py            # http://127.0.0.1:8001/api/chat
    python examples/serve_litellm_stream.py --once     # one request in-process, offline
    MODEL=openai/gpt-4o-mini python examples/serve_litellm_stream.py   # any litellm model

The default model, ``helix/demo``, is helix_stream's embedded offline model (no key needed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

import httpx
import litellm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from helix_stream.models.demo import register_demo
from helix_stream.transformers import UIMessageStreamResponse, to_ui_message_stream

MODEL = os.environ.get("MODEL", "helix/demo")
register_demo(litellm)  # only needed for the offline "helix/..." demo models


def to_openai(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """useChat's UIMessages -> OpenAI chat messages (text parts only, for this example)."""
    return [
        {
            "role": m["role"],
            "content": "".join(p.get("text", "") for p in m["parts"] if p.get("type") == "text"),
        }
        for m in messages
    ]


async def chat(request: Request) -> Response:
    body = await request.json()
    # Your existing call, unchanged:
    stream = await litellm.acompletion(
        model=MODEL, messages=to_openai(body["messages"]), stream=True
    )
    # The one line that serves it to useChat:
    return UIMessageStreamResponse(to_ui_message_stream(stream))


app = Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


async def run_once() -> str:
    """Post one message through the app, in-process; return the SSE body it answered."""
    body = {
        "id": "chat-1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hello!"}]}],
        "trigger": "submit-message",
    }
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://example") as client:
        response = await client.post("/api/chat", json=body)
    response.raise_for_status()
    return response.text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="one offline request, then exit")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    if args.once:
        print(asyncio.run(run_once()), end="")
        return 0
    import uvicorn

    print(f"useChat endpoint: http://{args.host}:{args.port}/api/chat (model {MODEL})")
    uvicorn.run(app, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
