"""The stall of ``tests/loop/test_timeouts.py`` on Anthropic's Messages wire format: the
``chunk`` limit fires at its time on both read paths (helix's own reader of the body, and
litellm's Anthropic adapter under model middleware), after the text that was seen."""

from __future__ import annotations

import time
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.errors import ModelTimeoutError
from tests.loopback import LoopbackServer, Reply, text


def _anthropic(loopback: LoopbackServer) -> dict[str, Any]:
    return {
        "model": "anthropic/claude-sonnet-4-5",
        "api_base": loopback.anthropic_base,
        "api_key": "sk-ant-loopback",
    }


@pytest.mark.parametrize("middleware", [None, [hs.default_settings(temperature=0)]])
async def test_a_stall_on_the_anthropic_wire_ends_at_the_chunk_limit(
    loopback: LoopbackServer, middleware: Any
) -> None:
    loopback.script(text("warm"))
    assert await hs.stream_text(**_anthropic(loopback), prompt="w", middleware=middleware).text()
    words = ["Once ", "upon ", "a ", "time"]
    loopback.script(Reply(deltas=[{"content": w} for w in words], stall_after=3))
    started = time.monotonic()
    seen = [
        x
        async for x in hs.stream_text(
            **_anthropic(loopback),
            prompt="go",
            middleware=middleware,
            timeout=hs.Timeout(first_chunk=5, chunk=0.5),
        )
    ]
    took = time.monotonic() - started
    errors = [x.error for x in seen if isinstance(x, c.ErrorChunk)]
    assert len(errors) == 1 and isinstance(errors[0], ModelTimeoutError)
    assert errors[0].limit == "chunk" and abs(took - 0.5) < 0.5
    assert "".join(x.delta for x in seen if isinstance(x, c.TextDelta)) == "Once upon a "
    assert len(loopback.requests) == 2  # the warm-up and this one: not retried
