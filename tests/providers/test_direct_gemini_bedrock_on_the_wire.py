"""A whole session on Gemini's and on Bedrock Converse's wire formats, read directly and
through litellm's wrapper.

The same six-request session (tools, context rows, parallel tool calls) against the loopback
Gemini and Bedrock servers: with helix's direct readers (the default) every request is byte for
byte the one litellm's wrapper path sends (Bedrock's ``cachePoint`` markers included: the
prompt cache sees the same prefix), and every step (text, tool calls, finish reason, usage,
response model) is the same (the tool-call ids litellm makes up for Gemini's calls
aside). litellm makes each request in both cases (for Bedrock it signs it
with the dummy AWS credentials the test sets).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from helix_stream.models import _lean_stream
from helix_stream.models._direct_bedrock import BedrockStream
from helix_stream.models._direct_gemini import GeminiStream
from tests.models._replay import record_readers
from tests.providers.bedrock_server import BedrockServer
from tests.providers.conftest import Provider
from tests.providers.gemini_server import GeminiServer
from tests.providers.test_rows_on_the_wire import run_session

SERVERS: dict[str, tuple[type[Any], type[Any]]] = {
    "gemini": (GeminiServer, GeminiStream),
    "bedrock": (BedrockServer, BedrockStream),
}


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    # Signed as for the real service, with credentials that open nothing.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDLOOPBACKEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "loopback-secret-key")
    yield record_readers(monkeypatch)
    _lean_stream.enabled = True


async def _session(family: str, direct: bool) -> tuple[Any, list[Any]]:
    _lean_stream.enabled = direct
    server = SERVERS[family][0]().start()
    server.cuts = (1, 7, 3, 64, 2, 13, 5, 200, 11)  # events and frames cut anywhere
    try:
        llm = server.llm()
        if family == "bedrock":
            del llm["api_key"]  # SigV4 with the environment's credentials
        session = await run_session(Provider(family=family, server=server, llm=llm))  # type: ignore[arg-type]
        return server, [r.payload for r in session.log]
    finally:
        server.stop()
        _lean_stream.enabled = True


@pytest.mark.parametrize("family", sorted(SERVERS))
async def test_a_session_sends_the_same_bytes_and_reads_the_same_steps(
    readers: list[Any], family: str
) -> None:
    wrapped, wrapped_log = await _session(family, direct=False)
    assert readers == []
    direct, direct_log = await _session(family, direct=True)
    assert len(readers) == 6 and all(isinstance(r, SERVERS[family][1]) for r in readers)
    assert [r.body for r in direct.requests] == [r.body for r in wrapped.requests]
    if family == "bedrock":
        assert b"cachePoint" in direct.requests[-1].body
        headers = {k.lower(): v for k, v in direct.requests[-1].headers.items()}
        assert headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert numbered(direct_log) == numbered(wrapped_log)


_RANDOM = re.compile(r"call_[0-9a-f]{24,}")


def numbered(log: list[Any]) -> str:
    """The log with the tool-call ids litellm makes up for Gemini numbered in order."""
    numbers: dict[str, str] = {}
    return _RANDOM.sub(lambda m: numbers.setdefault(m[0], f"<id {len(numbers)}>"), repr(log))
