"""A loopback Gemini API (``POST /models/{model}:streamGenerateContent?alt=sse``).

Point litellm at it with ``model="gemini/gemini-2.5-flash"``, ``api_base=server.base_url``.
Vertex AI sends Gemini models the same request body (litellm builds both with one function;
the tests check that on the transformation itself, since Vertex needs Google credentials).
"""

from __future__ import annotations

from typing import Any

from ._wire import Recorded, Say, WireServer, sse


class GeminiServer(WireServer):
    """Streams ``GenerateContentResponse`` chunks for scripted replies; records the bodies."""

    def llm(self, model: str = "gemini/gemini-2.5-flash") -> dict[str, Any]:
        return {"model": model, "api_base": self.base_url, "api_key": "gemini-loopback-key"}

    def render(self, request: Recorded, reply: Say, number: int) -> bytes:
        parts: list[dict[str, Any]] = []
        if reply.text:
            parts.append({"text": reply.text})
        parts += [{"functionCall": {"name": name, "args": args}} for name, args in reply.calls]
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-loopback",
        }
        return sse([(None, chunk)])
