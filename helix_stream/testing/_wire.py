"""A :class:`~._replies.Reply` as the events of a provider's streaming wire format.

This module owns two renderings: OpenAI's chat completions stream and Anthropic's Messages
stream, each a list of server-sent events, plus each format's error body. The first event opens
the answer (a stall waits after it); ``cut_after`` counts the events after it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from ._replies import Reply

__all__ = ["Wire", "error_body", "events", "whole"]

Wire = Literal["openai", "anthropic"]


def events(reply: Reply, wire: Wire) -> list[bytes]:
    """The reply's server-sent events (the last one ends the answer)."""
    return _openai(reply) if wire == "openai" else _anthropic(reply)


def whole(reply: Reply, wire: Wire) -> dict[str, Any]:
    """The reply as one JSON response (a call made without ``stream``)."""
    if wire == "anthropic":
        content: list[dict[str, Any]] = []
        if reply.reasoning:
            content.append(
                {"type": "thinking", "thinking": reply.reasoning, "signature": "scripted"}
            )
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
            for c in reply.tool_calls
        ]
        usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
        return {
            "id": "msg_scripted",
            "type": "message",
            "role": "assistant",
            "model": "claude-scripted",
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
            }
            for c in reply.tool_calls
        ]
    finish = "tool_calls" if reply.tool_calls else "stop"
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": _openai_usage(reply),
    }


def error_body(status: int, wire: Wire) -> dict[str, Any]:
    """The JSON body each provider answers an HTTP error with."""
    message = f"scripted HTTP {status}"
    if wire == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": "scripted", "code": status}}


def _pieces(text: str) -> list[str]:
    """Word by word, spaces kept: a stream's text arrives in pieces."""
    return re.findall(r"\S+\s*|\s+", text)


def _sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data)
    return f"{head}data: {body}\n\n".encode()


def _openai(reply: Reply) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": 1700000000,
                "model": "scripted",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": p}) for p in _pieces(reply.reasoning)]
    out += [chunk({"content": p}) for p in _pieces(reply.text)]
    for index, call in enumerate(reply.tool_calls):
        function = {"name": call.name, "arguments": json.dumps(dict(call.arguments))}
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": index, "id": call.id, "type": "function", "function": function}
                    ]
                }
            )
        )
    out.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    usage = _openai_usage(reply)
    usage_chunk = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "scripted",
        "choices": [],
        "usage": usage,
    }
    return [*out, _sse(usage_chunk), _sse("[DONE]")]


def _openai_usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }
    if reply.cached_input_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_input_tokens}
    return usage


def _anthropic(reply: Reply) -> list[bytes]:
    usage = {"input_tokens": reply.input_tokens, "output_tokens": 1}
    if reply.cached_input_tokens:
        usage["cache_read_input_tokens"] = reply.cached_input_tokens
    message: dict[str, Any] = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": "claude-scripted",
        "content": [],
        "stop_reason": None,
        "usage": usage,
    }
    out = [_sse({"type": "message_start", "message": message}, "message_start")]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.reasoning:
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(reply.reasoning)]
        deltas.append({"type": "signature_delta", "signature": "scripted"})
        blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
    if reply.text:
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(reply.text)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for call in reply.tool_calls:
        start = {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}
        arguments = json.dumps(dict(call.arguments))
        blocks.append((start, [{"type": "input_json_delta", "partial_json": arguments}]))
    for index, (start, deltas) in enumerate(blocks):
        out.append(
            _sse(
                {"type": "content_block_start", "index": index, "content_block": start},
                "content_block_start",
            )
        )
        for delta in deltas:
            out.append(
                _sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                )
            )
        out.append(_sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    stop = "tool_use" if reply.tool_calls else "end_turn"
    out.append(
        _sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": reply.output_tokens},
            },
            "message_delta",
        )
    )
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out
