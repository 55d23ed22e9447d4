"""The three chat servers the serving bench compares, each a Starlette app on ``POST /api/chat``.

Run one under uvicorn: ``python bench/_serving_apps.py KIND PORT MODEL_BASE MODEL [STORE]``
with KIND ``raw``, ``helix`` or ``pydantic-ai`` (bench_serving.py starts them).

* ``raw``: ``litellm.acompletion(stream=True)`` with the ``stream_options.include_usage`` helix
  sends, and the UI chunks written by hand (start, start-step, text parts, finish, ``[DONE]``):
  the least a litellm user can write.
* ``helix``: ``create_app`` over a SQLiteStore (the embedded default), a stored session per chat.
  :func:`helix_stream_text_app` is the one-shot form: ``stream_text(...).to_sse_response()``.
* ``pydantic-ai``: ``VercelAIAdapter.dispatch_request`` with an ``OpenAIChatModel`` (the OpenAI
  SDK, no litellm), from the ``bench`` extra.

All read the last user text of the ``useChat`` body and call the loopback model once.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

API_KEY = "sk-bench"
_UI_HEADERS = {
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}


def _user_text(body: dict[str, Any]) -> str:
    for message in reversed(body["messages"]):
        if message["role"] == "user":
            return "".join(p.get("text", "") for p in message["parts"] if p["type"] == "text")
    return ""


def _event(chunk: dict[str, Any]) -> str:
    return "data: " + json.dumps(chunk, separators=(",", ":"), ensure_ascii=False) + "\n\n"


def raw_app(base: str, model: str) -> Starlette:
    """Raw litellm + hand-written UI chunks."""
    import litellm

    async def chat(request: Request) -> Response:
        text = _user_text(await request.json())
        stream = await litellm.acompletion(
            model=f"openai/{model}",
            messages=[{"role": "user", "content": text}],
            api_base=base,
            api_key=API_KEY,
            stream=True,
            stream_options={"include_usage": True},
        )

        async def body() -> AsyncIterator[str]:
            yield _event({"type": "start", "messageId": f"msg-{uuid.uuid4().hex}"})
            yield _event({"type": "start-step"})
            yield _event({"type": "text-start", "id": "t"})
            try:
                async for chunk in stream:
                    if chunk.choices and (delta := chunk.choices[0].delta.content):
                        yield _event({"type": "text-delta", "id": "t", "delta": delta})
            finally:
                await stream.aclose()
            yield _event({"type": "text-end", "id": "t"})
            yield _event({"type": "finish-step"})
            yield _event({"type": "finish", "finishReason": "stop"})
            yield "data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream", headers=_UI_HEADERS)

    return Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


def helix_app(base: str, model: str, store: str) -> Starlette:
    """helix ``create_app`` over a SQLiteStore (or any store ``open_store`` takes)."""
    import helix_stream as hs
    from helix_stream.server import create_app
    from helix_stream.store import open_store

    executor = hs.Executor(store=open_store(store))
    agent = hs.Agent(
        name="bench", model=f"openai/{model}", settings={"api_base": base, "api_key": API_KEY}
    )
    return create_app(executor, agent)


def helix_stream_text_app(base: str, model: str) -> Starlette:
    """helix one-shot: ``stream_text(...).to_sse_response()``."""
    import helix_stream as hs
    from helix_stream.models import load_litellm

    load_litellm()

    async def chat(request: Request) -> Response:
        text = _user_text(await request.json())
        result = hs.stream_text(
            model=f"openai/{model}",
            messages=[{"role": "user", "content": text}],
            api_base=base,
            api_key=API_KEY,
        )
        return result.to_sse_response()

    return Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


def pydantic_ai_app(base: str, model: str) -> Starlette:
    """pydantic-ai's ``VercelAIAdapter`` over the OpenAI SDK."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.ui.vercel_ai import VercelAIAdapter

    agent = Agent(OpenAIChatModel(model, provider=OpenAIProvider(base_url=base, api_key=API_KEY)))

    async def chat(request: Request) -> Response:
        return await VercelAIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


def make_app(kind: str, base: str, model: str, store: str = "") -> Starlette:
    if kind == "raw":
        return raw_app(base, model)
    if kind == "helix":
        return helix_app(base, model, store)
    if kind == "helix-stream-text":
        return helix_stream_text_app(base, model)
    if kind == "pydantic-ai":
        return pydantic_ai_app(base, model)
    raise SystemExit(f"unknown server kind {kind!r}")


def main(argv: list[str]) -> None:
    import uvicorn

    kind, port, base, model, *rest = argv
    app = make_app(kind, base, model, rest[0] if rest else "")
    uvicorn.run(
        app, host="127.0.0.1", port=int(port), log_level="warning", backlog=2048, access_log=False
    )


if __name__ == "__main__":
    main(sys.argv[1:])
