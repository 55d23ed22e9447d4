"""A whole session on Anthropic's wire format, read directly and through litellm's wrapper.

The same six-request session (tools, context rows, parallel tool calls) against the loopback
Anthropic server with its simulated prompt cache: with helix's direct reader (the default)
every request is byte for byte the one litellm's wrapper path sends — cache markers included —
and every step (text, tool calls, finish reason, usage with the cache reads and writes,
response model) is the same. The streams the server sent are then replayed, cut at awkward
byte boundaries, and read both ways again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from helix_stream.models import _lean_stream
from helix_stream.models._direct_anthropic import AnthropicStream
from tests.models._replay import ReplayServer, read_turn, record_readers
from tests.providers._wire import Recorded, Say
from tests.providers.anthropic_server import AnthropicServer
from tests.providers.conftest import Provider
from tests.providers.test_rows_on_the_wire import run_session


class RecordingServer(AnthropicServer):
    """The loopback Anthropic server, keeping every response body it sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[bytes] = []

    def render(self, request: Recorded, reply: Say, number: int) -> bytes:
        body = super().render(request, reply, number)
        self.sent.append(body)
        return body


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    yield record_readers(monkeypatch)
    _lean_stream.enabled = True


async def _session(direct: bool) -> tuple[RecordingServer, list[Any]]:
    _lean_stream.enabled = direct
    server = RecordingServer().start()
    steps: list[Any] = []
    try:
        provider = Provider(family="anthropic", server=server, llm=server.llm())
        session = await run_session(provider)
        steps = [r.payload for r in session.log]
    finally:
        server.stop()
        _lean_stream.enabled = True
    return server, steps


async def test_a_session_sends_the_same_bytes_and_reads_the_same_steps(
    readers: list[Any],
) -> None:
    wrapped, wrapped_log = await _session(direct=False)
    assert readers == []
    direct, direct_log = await _session(direct=True)
    assert len(readers) == 6 and all(isinstance(r, AnthropicStream) for r in readers)
    assert [r.body for r in direct.requests] == [r.body for r in wrapped.requests]
    assert b"cache_control" in direct.requests[-1].body
    assert direct_log == wrapped_log
    # The simulated cache was read and written: the counters below are not zeros.
    assert any(u.cache_read_input_tokens for u in direct.usage)
    assert any(u.cache_creation_input_tokens for u in direct.usage)


async def test_the_recorded_streams_read_the_same_either_way(readers: list[Any]) -> None:
    recorded, _ = await _session(direct=False)
    assert len(recorded.sent) == 6
    replay = ReplayServer().start()
    try:
        for body in recorded.sent:
            replay.bodies.extend([body, body])
            wrapped = await read_turn(replay.anthropic_llm(), direct=False, prompt="go")
            direct = await read_turn(replay.anthropic_llm(), direct=True, prompt="go")
            assert direct == wrapped
            usage = direct[1][0].usage
            assert usage.input_tokens > 0 and usage.output_tokens == 5
    finally:
        replay.stop()
    assert sum(isinstance(r, AnthropicStream) for r in readers) == 6
