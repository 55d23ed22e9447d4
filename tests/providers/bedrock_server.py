"""A loopback Bedrock Converse API (``POST /model/{id}/converse-stream``).

Point litellm at it with ``model="bedrock/converse/<model id>"``, ``api_base=server.base_url``
and ``api_key=...`` (a Bedrock API key is sent as a bearer token, so no request signing is
involved). The reply is an AWS event stream (``application/vnd.amazon.eventstream``): binary
frames with a CRC32-checked prelude, string headers (``:event-type``, ``:message-type``,
``:content-type``) and a JSON payload — what botocore's decoder, and so litellm, reads.
"""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

from ._wire import Recorded, Say, WireServer

# A Converse model that takes cache points (litellm reads its cost map entry).
MODEL_ID = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def _header(name: str, value: str) -> bytes:
    raw_name, raw_value = name.encode(), value.encode()
    # name length, name, type 7 (string), value length, value
    return (
        struct.pack("B", len(raw_name))
        + raw_name
        + struct.pack("!BH", 7, len(raw_value))
        + raw_value
    )


def event_frame(event_type: str, payload: dict[str, Any]) -> bytes:
    """One Converse event: an event-stream message of message type ``event``."""
    return frame(
        {
            ":event-type": event_type,
            ":content-type": "application/json",
            ":message-type": "event",
        },
        payload,
    )


def frame(header_values: dict[str, str], payload: dict[str, Any]) -> bytes:
    """One event-stream message: prelude (total and header lengths, CRC), string headers,
    payload, message CRC."""
    headers = b"".join(_header(name, value) for name, value in header_values.items())
    body = json.dumps(payload).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack("!II", total, len(headers))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack("!I", zlib.crc32(message))


class BedrockServer(WireServer):
    """Streams Converse events for scripted replies; records the request bodies."""

    content_type = "application/vnd.amazon.eventstream"

    def llm(self, model_id: str = MODEL_ID) -> dict[str, Any]:
        return {
            "model": f"bedrock/converse/{model_id}",
            "api_base": self.base_url,
            "api_key": "bedrock-loopback-key",
            "aws_region_name": "us-east-1",
        }

    def render(self, request: Recorded, reply: Say, number: int) -> bytes:
        frames = [event_frame("messageStart", {"role": "assistant"})]
        index = 0
        if reply.text:
            frames += [
                event_frame(
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"text": reply.text}},
                ),
                event_frame("contentBlockStop", {"contentBlockIndex": index}),
            ]
            index += 1
        for i, (name, args) in enumerate(reply.calls):
            start = {"toolUse": {"toolUseId": f"tooluse_{number}_{i}", "name": name}}
            frames += [
                event_frame("contentBlockStart", {"contentBlockIndex": index, "start": start}),
                event_frame(
                    "contentBlockDelta",
                    {"contentBlockIndex": index, "delta": {"toolUse": {"input": json.dumps(args)}}},
                ),
                event_frame("contentBlockStop", {"contentBlockIndex": index}),
            ]
            index += 1
        stop = "tool_use" if reply.calls else "end_turn"
        frames += [
            event_frame("messageStop", {"stopReason": stop}),
            event_frame(
                "metadata",
                {
                    "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
                    "metrics": {"latencyMs": 1},
                },
            ),
        ]
        return b"".join(frames)
