"""A loopback OpenAI-format chat completions server for :class:`~tests.providers._wire.Say`
scripts (``POST .../chat/completions``, streamed).

OpenAI and Mistral both stream this format; ``llm()`` points litellm at it for either
(``openai/...`` or ``mistral/...``), so the request body is the one litellm builds for that
provider. (``tests/loopback.py`` is the general-purpose server of the other tests.)
"""

from __future__ import annotations

import json
from typing import Any

from ._wire import Recorded, Say, WireServer, sse


class OpenAIFormatServer(WireServer):
    """Streams chat completion chunks for scripted replies; records the bodies."""

    def llm(self, model: str = "openai/gpt-4o") -> dict[str, Any]:
        return {"model": model, "api_base": f"{self.base_url}/v1", "api_key": "sk-loopback"}

    def render(self, request: Recorded, reply: Say, number: int) -> bytes:
        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": "loopback",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        events: list[tuple[str | None, dict[str, Any]]] = [
            (None, chunk({"role": "assistant", "content": ""}))
        ]
        if reply.text:
            events.append((None, chunk({"content": reply.text})))
        for i, (name, args) in enumerate(reply.calls):
            call = {
                "index": i,
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            events.append((None, chunk({"tool_calls": [call]})))
        events.append((None, chunk({}, "tool_calls" if reply.calls else "stop")))
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        events.append((None, {**chunk({}), "choices": [], "usage": usage}))
        return sse(events) + b"data: [DONE]\n\n"
