"""The one retry policy: real HTTP through litellm to the loopback server, requests counted there."""

from __future__ import annotations

import time
from typing import Any

import pytest

from helix_stream import errors
from helix_stream.models._litellm import acompletion
from helix_stream.models._parse import StepParser
from helix_stream.models._retry import Attempt, RetryPolicy, open_stream, retry_after
from tests.loopback import LoopbackServer, Reply, error, text

FAST = RetryPolicy(initial_delay=0.001, max_delay=5.0)


def request(server: LoopbackServer, **extra: Any) -> dict[str, Any]:
    return {
        **server.llm(),
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        **extra,
    }


async def send(params: dict[str, Any]) -> Any:
    return await acompletion(**params)


async def read_text(first: Any, stream: Any) -> str:
    parser = StepParser(0)
    if first is not None:
        parser.feed(first)
    async for raw in stream:
        parser.feed(raw)
    return "".join(parser.text)


class Sleeps:
    """Records the waits instead of sleeping them (the delays are what is under test)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


async def test_a_429_with_retry_after_ms_waits_that_long_then_answers(
    loopback: LoopbackServer,
) -> None:
    loopback.script(error(429, "slow down", headers={"retry-after-ms": "60"}), text("Hello!"))
    attempts: list[Attempt] = []
    started = time.perf_counter()
    first, stream = await open_stream(
        send, request(loopback), RetryPolicy(), on_attempt=attempts.append
    )
    assert await read_text(first, stream) == "Hello!"
    assert time.perf_counter() - started >= 0.06  # really waited, not the 2 s default backoff
    assert len(loopback.requests) == 2
    (attempt,) = attempts
    assert attempt.number == 1 and isinstance(attempt.error, errors.ModelRateLimitError)
    assert attempt.delay is not None and 0.06 <= attempt.delay <= 0.066
    assert attempt.will_retry


async def test_retry_after_in_seconds_is_honoured_over_the_backoff(
    loopback: LoopbackServer,
) -> None:
    loopback.script(error(429, headers={"Retry-After": "3"}), text("ok"))
    sleeps = Sleeps()
    first, stream = await open_stream(send, request(loopback), FAST, sleep=sleeps)
    assert await read_text(first, stream) == "ok"
    assert len(sleeps.delays) == 1 and 3.0 <= sleeps.delays[0] <= 3.3


async def test_a_retry_after_longer_than_max_delay_ends_the_retries(
    loopback: LoopbackServer,
) -> None:
    loopback.script(error(429, headers={"retry-after": "600"}), text("never"))
    attempts: list[Attempt] = []
    with pytest.raises(errors.ModelRateLimitError):
        await open_stream(send, request(loopback), FAST, on_attempt=attempts.append)
    assert len(loopback.requests) == 1
    assert [a.delay for a in attempts] == [None]


async def test_retries_stop_after_max_retries_with_growing_delays(
    loopback: LoopbackServer,
) -> None:
    loopback.script(*[error(503, "overloaded")] * 5)
    sleeps = Sleeps()
    attempts: list[Attempt] = []
    policy = RetryPolicy(max_retries=2, initial_delay=1.0, jitter=0.5)
    with pytest.raises(errors.ModelUnavailableError):
        await open_stream(send, request(loopback), policy, on_attempt=attempts.append, sleep=sleeps)
    assert len(loopback.requests) == 3  # 1 + max_retries, not multiplied underneath
    assert [a.number for a in attempts] == [1, 2, 3]
    assert attempts[-1].delay is None
    first, second = sleeps.delays
    assert 0.5 <= first <= 1.0 and 1.0 <= second <= 2.0  # exponential, with jitter


async def test_max_retries_zero_makes_one_request_where_the_openai_client_made_three(
    loopback: LoopbackServer,
) -> None:
    # Without switching the client's own retries off, litellm's OpenAI path sends 3.
    loopback.script(*[error(429)] * 4)
    with pytest.raises(errors.ModelRateLimitError):
        await open_stream(send, request(loopback), RetryPolicy(max_retries=0))
    assert len(loopback.requests) == 1


async def test_a_500_before_the_first_chunk_is_retried(loopback: LoopbackServer) -> None:
    loopback.script(error(500, "boom"), text("recovered"))
    first, stream = await open_stream(send, request(loopback), FAST)
    assert await read_text(first, stream) == "recovered"
    assert len(loopback.requests) == 2


async def test_a_bad_request_is_not_retried(loopback: LoopbackServer) -> None:
    loopback.script(error(400, "bad params"), text("never"))
    attempts: list[Attempt] = []
    with pytest.raises(errors.ModelBadRequestError):
        await open_stream(send, request(loopback), FAST, on_attempt=attempts.append)
    assert len(loopback.requests) == 1
    assert [(a.number, a.delay) for a in attempts] == [(1, None)]


async def test_a_failure_after_the_first_chunk_is_not_retried(loopback: LoopbackServer) -> None:
    loopback.script(
        Reply(deltas=[{"content": "Hel"}, {"content": "lo"}], fail_after=1, error="broke"),
        text("a second answer would duplicate the text"),
    )
    attempts: list[Attempt] = []
    first, stream = await open_stream(send, request(loopback), FAST, on_attempt=attempts.append)
    assert first is not None
    with pytest.raises(Exception) as info:
        await read_text(first, stream)
    assert "broke" in str(info.value)
    assert len(loopback.requests) == 1 and attempts == []


async def test_a_lost_connection_is_retried_then_reported(loopback: LoopbackServer) -> None:
    closed = LoopbackServer().start()
    params = request(closed)
    closed.stop()  # nothing listens there any more
    attempts: list[Attempt] = []
    with pytest.raises(errors.ModelUnavailableError):
        await open_stream(
            send,
            params,
            RetryPolicy(max_retries=1, initial_delay=0.001),
            on_attempt=attempts.append,
        )
    assert [a.number for a in attempts] == [1, 2]


async def test_an_argument_that_cannot_be_sent_is_refused_before_any_request(
    loopback: LoopbackServer,
) -> None:
    class Model:
        pass

    with pytest.raises(errors.InvalidRequestError) as info:
        await open_stream(send, request(loopback, output_schema=Model), FAST)
    assert "output_schema=" in info.value.message and "Agent" in info.value.message
    assert info.value.retryable is False
    with pytest.raises(errors.InvalidRequestError) as info:
        await open_stream(send, request(loopback, user_tag=object()), FAST)
    assert "user_tag=" in info.value.message
    assert loopback.requests == []


def test_retry_after_reads_the_headers_under_a_translated_error() -> None:
    class Response:
        def __init__(self) -> None:
            self.headers = {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}

    cause = RuntimeError("429")
    cause.response = Response()  # type: ignore[attr-defined]
    error = errors.ModelRateLimitError("limited")
    error.__cause__ = cause
    seconds = retry_after(error)
    assert seconds is not None and seconds > 3600
    assert retry_after(errors.ModelRateLimitError("no headers")) is None


@pytest.mark.parametrize(
    "kwargs",
    [{"max_retries": -1}, {"max_retries": 1.5}, {"jitter": 2.0}, {"initial_delay": -1.0}],
    ids=["negative", "not-int", "jitter", "delay"],
)
def test_a_policy_of_the_wrong_shape_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidRequestError):
        RetryPolicy(**kwargs)
