"""A loopback server that replays fixed response bodies, cut at awkward byte boundaries.

Each ``POST`` gets the next queued body as a chunked ``text/event-stream`` response, written in
pieces of 1, 7, 3, 64, 2, 13, ... bytes (flushed one by one), so that a reader meets lines,
events and UTF-8 characters cut anywhere. Point litellm at it with ``llm()`` (``openai/x``) or
``anthropic_llm()``.

:func:`read_turn` reads one turn through litellm's stream wrapper or helix's direct reader;
:func:`record_readers` records which reader each stream got.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.models import _lean_stream
from tests.providers._wire import Recorded, WireServer, pieces

CUTS = (1, 7, 3, 64, 2, 13, 5, 200, 11)

__all__ = ["CUTS", "ReplayServer", "pieces", "read_turn", "record_readers"]


class ReplayServer(WireServer):
    """Answers each POST with the next body of :attr:`bodies`, cut at :data:`CUTS`."""

    cuts = CUTS

    def __init__(self) -> None:
        super().__init__()
        self.bodies: deque[bytes] = deque()

    def render(self, request: Recorded, reply: Any, number: int) -> bytes:
        return self.bodies.popleft()

    def llm(self) -> dict[str, Any]:
        """litellm's arguments for an OpenAI-compatible server (helix's defaults otherwise)."""
        return {"model": "openai/x", "api_base": f"{self.base_url}/v1", "api_key": "sk-replay"}

    def anthropic_llm(self) -> dict[str, Any]:
        return {
            "model": "anthropic/claude-sonnet-4-5",
            "api_base": self.base_url,
            "api_key": "sk-ant-replay",
        }


def record_readers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The direct reader made for each stream from now on (``None`` where litellm kept it)."""
    made: list[Any] = []
    original = _lean_stream.direct_stream

    def spy(*args: Any, **kwargs: Any) -> Any:
        made.append(original(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(_lean_stream, "direct_stream", spy)
    return made


async def read_turn(
    llm: dict[str, Any], *, direct: bool, lightened: bool = False, **kw: Any
) -> Any:
    """One single-step turn: (its chunks but ``Start``, its steps), or ``("error", type, text)``.

    ``direct=False`` leaves litellm's stream exactly as litellm makes it (what a registered
    callback gets); ``direct=True`` is helix's default; ``lightened=True`` (with
    ``direct=True``) is litellm's wrapper lightened, with no direct reader (the path of a
    provider helix has no reader for). Every delta must be a string.
    """
    _lean_stream.enabled = direct
    original = _lean_stream.direct_stream
    if lightened:
        _lean_stream.direct_stream = lambda *args, **kwargs: None  # type: ignore[assignment]
    result = hs.stream_text(**llm, max_retries=0, stop_when=hs.step_count_is(1), **kw)
    try:
        out = [x for x in [chunk async for chunk in result] if not isinstance(x, hs.chunks.Start)]
        steps = await result.steps()
    except hs.errors.HelixError as exc:
        return ("error", type(exc), str(exc))
    finally:
        _lean_stream.enabled = True
        _lean_stream.direct_stream = original
    assert all(isinstance(getattr(x, "delta", ""), str) for x in out), out
    return out, steps
