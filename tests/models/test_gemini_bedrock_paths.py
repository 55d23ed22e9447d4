"""Gemini and Bedrock Converse streams read the same on both of helix's paths.

Every body in ``_gemini_bedrock_streams.py`` is replayed from a loopback server speaking the
provider's wire format (Gemini's ``streamGenerateContent`` SSE; Bedrock's binary AWS event
stream), cut at awkward byte boundaries, through real HTTP made by litellm (the ``gemini/``
route with an ``api_base``; ``bedrock/converse/`` with an ``api_base`` and dummy AWS
credentials, so litellm signs the request). It is read by ``hs.stream_text`` twice: through
litellm's own stream wrapper (what a registered callback gets) and through helix's direct
reader (the default), and once more through litellm's wrapper lightened (the path of a
stream no direct reader takes). All give the same chunks, text, reasoning, tool calls, finish reason
and usage, or the same typed error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

import helix_stream as hs
from helix_stream import chunks as c
from helix_stream.models import _lean_stream
from helix_stream.models._direct_bedrock import BedrockStream
from helix_stream.models._direct_gemini import GeminiStream
from tests.models._gemini_bedrock_streams import BEDROCK, GEMINI, PARTIAL_ARGS
from tests.models._replay import ReplayServer, read_turn


class BedrockReplay(ReplayServer):
    content_type = "application/vnd.amazon.eventstream"


def _serving(server: ReplayServer) -> Iterator[ReplayServer]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gemini() -> Iterator[ReplayServer]:
    yield from _serving(ReplayServer())


@pytest.fixture(scope="module")
def bedrock() -> Iterator[ReplayServer]:
    yield from _serving(BedrockReplay())


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy AWS credentials: litellm signs the request (SigV4) as for the real service."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDLOOPBACKEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "loopback-secret-key")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK", raising=False)


def gemini_llm(server: ReplayServer) -> dict[str, Any]:
    return {"model": "gemini/gemini-2.5-flash", "api_base": server.base_url,
            "api_key": "gemini-replay-key"}  # fmt: skip


def bedrock_llm(server: ReplayServer) -> dict[str, Any]:
    return {"model": "bedrock/converse/anthropic.claude-sonnet-4-5-20250929-v1:0",
            "api_base": server.base_url, "aws_region_name": "us-east-1"}  # fmt: skip


async def read(
    server: ReplayServer, llm: dict[str, Any], body: bytes, *, direct: bool,
    lightened: bool = False,
) -> Any:  # fmt: skip
    """(chunks, step) of one turn, or ("error", type, text)."""
    server.bodies.append(body)
    result = await read_turn(llm, direct=direct, lightened=lightened, prompt="Hello")
    return result if result[0] == "error" else (result[0], result[1][0])


_RANDOM = re.compile(r"call_[0-9a-f]{24,}|chatcmpl-[0-9a-f-]{36}")


def same(result: Any) -> str:
    """Everything both paths must agree on: the chunks and the step, with the ids litellm
    makes up per stream (Gemini's tool-call ids, Bedrock's response id) numbered in order."""
    if result[0] == "error":
        return repr(result)
    numbers: dict[str, str] = {}
    return _RANDOM.sub(lambda m: numbers.setdefault(m[0], f"<id {len(numbers)}>"), repr(result))


async def every_path_reads_alike(
    server: ReplayServer, llm: dict[str, Any], body: bytes, readers: list[Any], kind: type
) -> None:
    wrapped = await read(server, llm, body, direct=False)
    assert readers == []
    direct = await read(server, llm, body, direct=True)
    assert len(readers) == 1 and isinstance(readers[0], kind)
    assert same(direct) == same(wrapped)
    lightened = await read(server, llm, body, direct=True, lightened=True)
    assert same(lightened) == same(wrapped)


@pytest.mark.parametrize("name", sorted(GEMINI))
async def test_gemini_reads_alike_on_every_path(
    gemini: ReplayServer, readers: list[Any], name: str
) -> None:
    await every_path_reads_alike(gemini, gemini_llm(gemini), GEMINI[name], readers, GeminiStream)


@pytest.mark.parametrize("name", sorted(BEDROCK))
async def test_bedrock_reads_alike_on_every_path(
    bedrock: ReplayServer, readers: list[Any], aws: None, name: str
) -> None:
    await every_path_reads_alike(
        bedrock, bedrock_llm(bedrock), BEDROCK[name], readers, BedrockStream
    )


def _step(result: Any) -> Any:
    assert result[0] != "error", result
    return result[1]


async def test_gemini_shapes_read_as_documented(gemini: ReplayServer) -> None:
    llm = gemini_llm(gemini)
    thinking = _step(await read(gemini, llm, GEMINI["thoughts, then text with a signature"],
                                direct=True))  # fmt: skip
    assert thinking.text == "Hello there, héllo ✓!"
    assert thinking.reasoning == "**Weighing it**\n\nThe user greets me."
    assert thinking.finish_reason == "stop"
    usage = thinking.usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (9, 45, 40)
    calls = _step(await read(gemini, llm, GEMINI["text, then two function calls in one event"],
                             direct=True))  # fmt: skip
    assert [(t.name, t.input) for t in calls.tool_calls] == [
        ("weather", {"city": "Oslo"}),
        ("time", {"tz": "UTC"}),
    ]
    assert calls.finish_reason == "tool-calls"
    cut = _step(await read(gemini, llm, GEMINI["safety ratings on every event, max tokens"],
                           direct=True))  # fmt: skip
    assert (cut.text, cut.finish_reason) == ("A long answer", "length")
    cached = _step(await read(gemini, llm, GEMINI["cached prompt tokens in the usage"],
                              direct=True))  # fmt: skip
    assert (cached.usage.input_tokens, cached.usage.cached_input_tokens) == (2000, 1800)
    failed = await read(gemini, llm, GEMINI["an error event mid-stream"], direct=True)
    assert failed[0] == "error" and issubclass(failed[1], hs.errors.ModelRateLimitError)


async def test_gemini_grounding_gives_the_same_sources(gemini: ReplayServer) -> None:
    body = GEMINI["grounded answer with search sources"]
    urls = []
    for direct in (False, True):
        chunks, step = await read(gemini, gemini_llm(gemini), body, direct=direct)
        assert step.text == "It is cold."
        urls.append([x.url for x in chunks if isinstance(x, c.SourceUrl)])
    assert urls[0] == urls[1]


async def test_bedrock_shapes_read_as_documented(bedrock: ReplayServer, aws: None) -> None:
    llm = bedrock_llm(bedrock)
    text = _step(await read(bedrock, llm, BEDROCK["text with cache reads and writes"],
                            direct=True))  # fmt: skip
    assert (text.text, text.finish_reason) == ("Hello there ✓", "stop")
    assert (text.usage.cached_input_tokens, text.usage.cache_creation_input_tokens) == (1200, 300)
    thinking = _step(await read(bedrock, llm, BEDROCK["reasoning with a signature, then text"],
                                direct=True))  # fmt: skip
    assert thinking.reasoning == "The user says hi. I should greet them back politely."
    assert thinking.text == "Hi!"
    # Not reported by Bedrock: counted from the reasoning text, once, as litellm counts it.
    assert 5 < thinking.usage.reasoning_tokens < 60
    calls = _step(await read(bedrock, llm, BEDROCK["text, then two tool calls, one without input"],
                             direct=True))  # fmt: skip
    assert [(t.id, t.name, t.input) for t in calls.tool_calls] == [
        ("tooluse_a", "weather", {"city": "Oslo"}),
        ("tooluse_b", "now", {}),
    ]
    assert calls.finish_reason == "tool-calls"
    throttled = await read(bedrock, llm, BEDROCK["a throttlingException before any content"],
                           direct=True)  # fmt: skip
    assert throttled[0] == "error" and issubclass(throttled[1], hs.errors.ModelRateLimitError)


async def test_bedrock_requests_are_signed(bedrock: ReplayServer, aws: None) -> None:
    bedrock.requests.clear()
    await read(bedrock, bedrock_llm(bedrock), BEDROCK["max tokens"], direct=True)
    (request,) = bedrock.requests
    assert request.path.endswith("/converse-stream")
    auth = {k.lower(): v for k, v in request.headers.items()}["authorization"]
    assert auth.startswith("AWS4-HMAC-SHA256 Credential=AKIDLOOPBACKEXAMPLE/")


async def test_a_stream_litellm_cannot_parse_is_one_request_and_a_typed_error(
    gemini: ReplayServer,
) -> None:
    for direct in (False, True):
        gemini.bodies.extend([PARTIAL_ARGS] * 3)
        before = gemini.calls
        _lean_stream.enabled = direct
        try:
            result = hs.stream_text(**gemini_llm(gemini), prompt="Hello", max_retries=2,
                                    stop_when=hs.step_count_is(1))  # fmt: skip
            errors = [x.error for x in [x async for x in result] if isinstance(x, c.ErrorChunk)]
        finally:
            _lean_stream.enabled = True
            gemini.bodies.clear()
        assert gemini.calls - before == 1, direct  # not retried as if it were transient
        (error,) = errors
        assert isinstance(error, hs.errors.ModelError) and error.code == "model_error"
        assert not error.retryable
        assert "KeyError: 'args'" in str(error)


@pytest.mark.parametrize(
    ("status", "error"),
    [
        pytest.param(429, hs.errors.ModelRateLimitError, id="429"),
        pytest.param(400, hs.errors.ModelBadRequestError, id="400"),
        pytest.param(503, hs.errors.ModelUnavailableError, id="503"),
    ],
)
async def test_an_error_status_is_the_same_typed_error_on_every_path(
    gemini: ReplayServer, bedrock: ReplayServer, aws: None, status: int, error: type
) -> None:
    for server, llm, body in (
        (gemini, gemini_llm(gemini), b'{"error": {"code": %d, "message": "No.", "status": "X"}}'),
        (bedrock, bedrock_llm(bedrock), b'{"message": "No."}'),
    ):
        server.status = status
        try:
            results = [
                await read(server, llm, body % status if b"%d" in body else body, direct=direct,
                           lightened=lightened)
                for direct, lightened in ((False, False), (True, False), (True, True))
            ]  # fmt: skip
        finally:
            server.status = 200
        assert results[0][0] == "error" and issubclass(results[0][1], error), results[0]
        assert results[1] == results[0] and results[2] == results[0]


class WholeReplay(ReplayServer):
    cuts = None  # the whole body in one block: the events before a failing one still count


class WholeBedrockReplay(BedrockReplay):
    cuts = None


@pytest.mark.parametrize(
    ("make", "name"),
    [
        pytest.param(WholeReplay, "an error event mid-stream", id="gemini"),
        pytest.param(WholeBedrockReplay, "a modelStreamErrorException after text", id="bedrock"),
    ],
)
async def test_text_before_an_error_in_the_same_block_is_streamed(
    aws: None, make: type[ReplayServer], name: str
) -> None:
    server = make().start()
    try:
        llm = gemini_llm(server) if make is WholeReplay else bedrock_llm(server)
        body = (GEMINI if make is WholeReplay else BEDROCK)[name]
        server.bodies.append(body)
        result = hs.stream_text(**llm, prompt="Hello", stop_when=hs.step_count_is(1))
        chunks = [x async for x in result]
    finally:
        server.stop()
    assert [x.delta for x in chunks if isinstance(x, c.TextDelta)] == [
        "Part" if make is WholeReplay else "Partial"
    ]
    assert isinstance(chunks[-1], c.ErrorChunk) and server.calls == 1  # never retried after text
