"""The three chat servers the serving bench compares, each a Starlette app on ``POST /api/chat``.

Run one under uvicorn: ``python bench/_serving_apps.py KIND PORT MODEL_BASE MODEL [STORE]``
with KIND ``raw``, ``helix`` or ``pydantic-ai`` (bench_serving.py starts them).

Each app talks to the loopback model in one wire format (``family``): ``openai`` (the
default), ``anthropic``, ``gemini`` or ``bedrock`` (Converse); pydantic-ai then uses its
``OpenAIChatModel``, ``AnthropicModel`` (the ``anthropic`` SDK), ``GoogleModel`` (``google-genai``)
or ``BedrockConverseModel`` (boto3, fake credentials).

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
FAMILIES = ("openai", "anthropic", "gemini", "bedrock")


def llm(family: str, base: str, model: str) -> dict[str, Any]:
    """litellm's arguments for the loopback model in ``family``'s wire format (``base`` ends
    in ``/v1``)."""
    root = base.removesuffix("/v1")
    if family == "openai":
        return {"model": f"openai/{model}", "api_base": base, "api_key": API_KEY}
    if family == "anthropic":
        return {"model": f"anthropic/{model}", "api_base": root, "api_key": API_KEY}
    if family == "gemini":
        return {"model": f"gemini/{model}", "api_base": root, "api_key": API_KEY}
    if family == "bedrock":
        return {"model": f"bedrock/converse/{model}", "api_base": root, "api_key": API_KEY,
                "aws_region_name": "us-east-1"}  # fmt: skip
    raise SystemExit(f"unknown family {family!r}")
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


def raw_app(base: str, model: str, family: str = "openai") -> Starlette:
    """Raw litellm + hand-written UI chunks."""
    import litellm

    kwargs = llm(family, base, model)

    async def chat(request: Request) -> Response:
        text = _user_text(await request.json())
        stream = await litellm.acompletion(
            **kwargs,
            messages=[{"role": "user", "content": text}],
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


def helix_app(base: str, model: str, store: str, family: str = "openai") -> Starlette:
    """helix ``create_app`` over a SQLiteStore (or any store ``open_store`` takes)."""
    import helix_stream as hs
    from helix_stream.server import create_app
    from helix_stream.store import open_store

    executor = hs.Executor(store=open_store(store))
    settings = llm(family, base, model)
    agent = hs.Agent(name="bench", model=settings.pop("model"), settings=settings)
    return create_app(executor, agent)


def helix_stream_text_app(base: str, model: str, family: str = "openai") -> Starlette:
    """helix one-shot: ``stream_text(...).to_sse_response()``."""
    import helix_stream as hs
    from helix_stream.models import load_litellm

    load_litellm()
    kwargs = llm(family, base, model)

    async def chat(request: Request) -> Response:
        text = _user_text(await request.json())
        result = hs.stream_text(**kwargs, messages=[{"role": "user", "content": text}])
        return result.to_sse_response()

    return Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


def pydantic_ai_model(family: str, base: str, model: str) -> Any:
    """pydantic-ai's own model class for ``family``, pointed at the loopback model."""
    root = base.removesuffix("/v1")
    if family == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(model, provider=AnthropicProvider(base_url=root, api_key=API_KEY))
    if family == "gemini":
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        return GoogleModel(model, provider=GoogleProvider(api_key=API_KEY, base_url=root))
    if family == "bedrock":
        import boto3
        from pydantic_ai.models.bedrock import BedrockConverseModel
        from pydantic_ai.providers.bedrock import BedrockProvider

        client = boto3.client("bedrock-runtime", endpoint_url=root, region_name="us-east-1",
                              aws_access_key_id="bench", aws_secret_access_key="bench")  # fmt: skip
        return BedrockConverseModel(model, provider=BedrockProvider(bedrock_client=client))
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(model, provider=OpenAIProvider(base_url=base, api_key=API_KEY))


def pydantic_ai_app(base: str, model: str, family: str = "openai") -> Starlette:
    """pydantic-ai's ``VercelAIAdapter`` over the provider's own SDK."""
    from pydantic_ai import Agent
    from pydantic_ai.ui.vercel_ai import VercelAIAdapter

    agent = Agent(pydantic_ai_model(family, base, model))

    async def chat(request: Request) -> Response:
        return await VercelAIAdapter.dispatch_request(request, agent=agent)

    return Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])


def make_app(
    kind: str, base: str, model: str, store: str = "", family: str = "openai"
) -> Starlette:
    if kind == "raw":
        return raw_app(base, model, family)
    if kind == "helix":
        return helix_app(base, model, store, family)
    if kind == "helix-stream-text":
        return helix_stream_text_app(base, model, family)
    if kind == "pydantic-ai":
        return pydantic_ai_app(base, model, family)
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
