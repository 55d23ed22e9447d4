"""Cache lifetimes (``PromptCache(ttl=...)``, ``models/_cache.py``): which breakpoint gets an
hour, Anthropic's order rule, and the families that take none."""

from __future__ import annotations

from typing import Any

import pytest

import helix_stream as hs
from helix_stream.models._cache import CacheHints, apply_cache_breakpoints
from helix_stream.models._cache_segments import breakpoints

HOUR = {"type": "ephemeral", "ttl": "1h"}


def request() -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    return {
        "model": "anthropic/claude-sonnet-4-5",
        "tools": [tool],
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello"},
            {"role": "user", "content": "Weather?"},
        ],
    }


def lifetimes(params: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p.segment, p.ttl) for p in breakpoints(params)]


@pytest.mark.parametrize(
    ("hints", "expected"),
    [
        pytest.param(CacheHints(), ["5m", "5m", "5m", "5m"], id="nothing-waits"),
        pytest.param(CacheHints(can_park=True), ["1h", "1h", "1h", "1h"], id="can-park"),
        pytest.param(CacheHints(slow=True), ["1h", "1h", "5m", "5m"], id="slow-session"),
    ],
)
def test_auto_decides_per_breakpoint_and_keeps_hours_before_minutes(
    hints: CacheHints, expected: list[str]
) -> None:
    out = apply_cache_breakpoints(request(), "anthropic", hs.PromptCache(ttl="auto"), hints)
    found = lifetimes(out)
    assert [s for s, _ in found] == ["tools", "system", "message 1", "message 3"]
    assert [t for _, t in found] == expected


def test_auto_adds_only_five_minute_markers_beside_the_callers_own() -> None:
    params = request()
    params["messages"][1] = {
        "role": "user",
        "content": [{"type": "text", "text": "Hi", "cache_control": {"type": "ephemeral"}}],
    }
    out = apply_cache_breakpoints(
        params, "anthropic", hs.PromptCache(ttl="auto"), CacheHints(can_park=True, slow=True)
    )
    assert {t for _, t in lifetimes(out)} == {"5m"}


def test_one_hour_is_for_the_anthropic_family_only() -> None:
    out = apply_cache_breakpoints(request(), "bedrock", hs.PromptCache(ttl="1h"))
    assert "ttl" not in str(out)
    assert lifetimes(out) and {t for _, t in lifetimes(out)} == {"5m"}
    out = apply_cache_breakpoints(request(), "anthropic", hs.PromptCache(ttl="1h"))
    assert out["tools"][-1]["cache_control"] == HOUR
    assert out["messages"][-1]["cache_control"] == HOUR
    assert apply_cache_breakpoints(request(), "openai", hs.PromptCache(ttl="1h")) == request()


def test_auto_string_and_five_minutes_send_what_auto_always_sent() -> None:
    a = apply_cache_breakpoints(request(), "anthropic", "auto", CacheHints(can_park=True))
    b = apply_cache_breakpoints(
        request(), "anthropic", hs.PromptCache(ttl="5m"), CacheHints(can_park=True)
    )
    assert a == b and "ttl" not in str(a)
