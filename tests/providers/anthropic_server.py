"""A loopback Anthropic Messages API (``POST /v1/messages``, streamed) with a simulated cache.

Point litellm at it with ``model="anthropic/claude-sonnet-4-5"``, ``api_base=server.base_url``.

The cache simulation follows Anthropic's documented rules, counted in **rough tokens** (the
UTF-8 bytes of each block's JSON, without its marker, divided by 4, rounded up):

* A request is a sequence of blocks in cache order: each tool, each system block, then each
  content block of each message (a block is identified with its message's index and role).
* Every block a request marks with ``cache_control`` stores the prefix that ends there.
* A request reads the longest stored prefix that ends at a block of its own which is at most
  ``lookback`` blocks before one of its own marked blocks (Anthropic checks for hits only
  backwards from a breakpoint, about 20 blocks); a request without markers reads nothing.
* ``cache_read_input_tokens`` is that prefix; ``cache_creation_input_tokens`` is what lies
  between it and the request's last marker; ``input_tokens`` is the rest.

The figures are reported in the stream's ``message_start`` usage, as Anthropic does.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ._wire import Recorded, Say, WireServer, sse


@dataclass(frozen=True)
class CacheUsage:
    """The simulated usage of one request, in rough tokens."""

    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    @property
    def total(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


def _unmarked(block: Any) -> Any:
    if isinstance(block, dict):
        return {k: _unmarked(v) for k, v in block.items() if k != "cache_control"}
    if isinstance(block, (list, tuple)):
        return [_unmarked(v) for v in block]
    return block


def cache_blocks(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """The request's blocks in Anthropic's cache order: (canonical bytes, marked)."""
    blocks: list[tuple[Any, Any]] = []
    for tool in body.get("tools") or []:
        blocks.append((("tool", tool), tool))
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    for block in system or []:
        blocks.append((("system", block), block))
    for index, message in enumerate(body.get("messages") or []):
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content:
            blocks.append(((index, message["role"], block), block))
    return [
        (
            json.dumps(_unmarked(key), sort_keys=True, ensure_ascii=False).encode(),
            isinstance(block, dict) and block.get("cache_control") is not None,
        )
        for key, block in blocks
    ]


def rough_tokens(data: bytes) -> int:
    return -(-len(data) // 4)


class PromptCache:
    """The simulated provider cache: prefixes stored by the hash of their blocks."""

    def __init__(self, lookback: int = 20) -> None:
        self.lookback = lookback
        self.stored: set[bytes] = set()

    def use(self, body: dict[str, Any]) -> CacheUsage:
        blocks = cache_blocks(body)
        sizes = [rough_tokens(data) for data, _ in blocks]
        chain: list[bytes] = []
        digest = b""
        for data, _ in blocks:
            digest = hashlib.sha256(digest + hashlib.sha256(data).digest()).digest()
            chain.append(digest)
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        # Positions a read may end at: at most `lookback` blocks back from one of our marks.
        reachable = {p for m in marks for p in range(max(0, m - self.lookback + 1), m + 1)}
        read_end = max((p + 1 for p in reachable if chain[p] in self.stored), default=0)
        write_end = max((m + 1 for m in marks), default=0)
        read = sum(sizes[:read_end])
        created = sum(sizes[read_end:write_end])
        for m in marks:
            self.stored.add(chain[m])
        return CacheUsage(
            input_tokens=sum(sizes) - read - created,
            cache_read_input_tokens=read,
            cache_creation_input_tokens=created,
        )


class AnthropicServer(WireServer):
    """Streams Anthropic Messages events; records bodies and the simulated cache usage."""

    def __init__(self, lookback: int = 20) -> None:
        super().__init__()
        self.cache = PromptCache(lookback)
        self.usage: list[CacheUsage] = []
        # Per request, in order: the ``diagnostics`` object its message_start carries (cache
        # diagnostics, Anthropic's beta), or None for none.
        self.diagnostics: list[dict[str, Any] | None] = []

    def llm(self, model: str = "anthropic/claude-sonnet-4-5") -> dict[str, Any]:
        return {"model": model, "api_base": self.base_url, "api_key": "sk-ant-loopback"}

    def reset(self) -> None:
        super().reset()
        self.cache = PromptCache(self.cache.lookback)
        self.usage.clear()

    def render(self, request: Recorded, reply: Say, number: int) -> bytes:
        usage = self.cache.use(request.json())
        with self._lock:
            self.usage.append(usage)
        start = {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": "claude-loopback",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_read_input_tokens": usage.cache_read_input_tokens,
                "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                "output_tokens": 1,
            },
        }
        with self._lock:
            diagnostics = self.diagnostics.pop(0) if self.diagnostics else None
        if diagnostics is not None:
            start["diagnostics"] = diagnostics
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start})
        ]
        index = 0
        if reply.text:
            events += [
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": reply.text},
                    },
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
            index += 1
        for i, (name, args) in enumerate(reply.calls):
            block = {"type": "tool_use", "id": f"toolu_{number}_{i}", "name": name, "input": {}}
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block},
                ),
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": json.dumps(args)},
                    },
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
            index += 1
        stop = "tool_use" if reply.calls else "end_turn"
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return sse(events)
