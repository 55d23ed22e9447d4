"""A model error from helix is also the litellm exception a user's ``except`` names.

Against the loopback server (real HTTP through litellm): a 429 is a ``litellm.RateLimitError``
and an ``hs.errors.ModelRateLimitError``; a stalled stream stopped by ``timeout=`` is a
``litellm.Timeout`` and an ``hs.ModelTimeoutError``; helix's ``code``, ``http_status`` and
``retryable`` stay helix's. The drop-in ``wrap_acompletion`` raises litellm's own exception.
"""

from __future__ import annotations

import litellm
import pytest

import helix_stream as hs
from tests._readme import readme_example
from tests.loopback import LoopbackServer, Reply, error, text


async def test_except_litellm_rate_limit_error_catches_a_429_from_stream_text(
    warm_loopback: LoopbackServer,
) -> None:
    warm_loopback.script(error(429, "slow down"))
    try:
        await hs.stream_text(**warm_loopback.llm(), prompt="x", max_retries=0).text()
    except litellm.RateLimitError as exc:
        caught: BaseException = exc
    assert isinstance(caught, hs.errors.ModelRateLimitError)
    assert (caught.code, caught.http_status, caught.retryable) == ("model_rate_limited", 429, True)
    assert caught.status_code == 429  # litellm's attribute, kept
    assert "slow down" in str(caught) and type(caught).__name__ == "ModelRateLimitError"


async def test_hs_model_error_catches_the_same_429(warm_loopback: LoopbackServer) -> None:
    warm_loopback.script(error(429), error(429))
    kinds = []
    for _ in range(2):
        with pytest.raises(hs.ModelError) as info:
            await hs.generate_text(**warm_loopback.llm(), prompt="x", max_retries=0)
        assert isinstance(info.value, litellm.RateLimitError)
        kinds.append(type(info.value))
    assert kinds[0] is kinds[1]  # the combined class is made once per pair


@pytest.mark.parametrize(
    ("status", "helix", "foreign"),
    [
        pytest.param(401, hs.errors.ModelAuthError, litellm.AuthenticationError, id="401"),
        pytest.param(400, hs.errors.ModelBadRequestError, litellm.BadRequestError, id="400"),
        pytest.param(
            503, hs.errors.ModelUnavailableError, litellm.ServiceUnavailableError, id="503"
        ),
    ],
)
async def test_other_statuses_are_both_classes(
    warm_loopback: LoopbackServer, status: int, helix: type, foreign: type
) -> None:
    warm_loopback.script(error(status, "no"))
    with pytest.raises(foreign) as info:
        await hs.generate_text(**warm_loopback.llm(), prompt="x", max_retries=0)
    assert isinstance(info.value, helix)
    assert info.value.code == helix.code and info.value.http_status == helix.http_status


async def test_except_litellm_timeout_catches_a_stall_stopped_by_the_chunk_limit(
    warm_loopback: LoopbackServer,
) -> None:
    warm_loopback.script(
        Reply(deltas=[{"content": "a"}, {"content": "b"}], stall_after=1, stall_for=2.0)
    )
    result = hs.stream_text(
        **warm_loopback.llm(), prompt="x", max_retries=0, timeout=hs.Timeout(chunk=0.3)
    )
    try:
        await result.text()
    except litellm.Timeout as exc:
        caught: BaseException = exc
    assert isinstance(caught, hs.ModelTimeoutError) and isinstance(caught, hs.ModelError)
    assert (caught.limit, caught.after) == ("chunk", 0.3)
    assert (caught.code, caught.http_status, caught.retryable) == ("model_timeout", 504, True)
    assert str(caught).startswith("Timed out: the model's stream stalled")


async def test_wrap_acompletion_raises_exactly_what_litellm_raises(
    warm_loopback: LoopbackServer,
) -> None:
    acompletion = hs.wrap_acompletion(litellm.acompletion, [hs.default_settings(temperature=0)])
    warm_loopback.script(error(429))
    with pytest.raises(litellm.RateLimitError) as info:
        await acompletion(
            messages=[{"role": "user", "content": "x"}], num_retries=0, **warm_loopback.llm()
        )
    assert type(info.value) is litellm.RateLimitError
    assert not isinstance(info.value, hs.HelixError)


async def test_the_readme_except_clauses_catch_a_429_and_a_timeout(
    warm_loopback: LoopbackServer,
) -> None:
    ask = readme_example("## Errors").ask
    llm = warm_loopback.llm()
    model = hs.wrap_model(
        llm["model"], [hs.default_settings(api_base=llm["api_base"], api_key=llm["api_key"])]
    )
    warm_loopback.script(error(429), text("hello"))
    assert await ask(model, "x") == "busy (model_rate_limited, 429)"
    assert await ask(model, "x") == "hello"
    stall = Reply(deltas=[{"content": "a"}, {"content": "b"}], stall_after=0, stall_for=2.0)
    warm_loopback.script(stall)
    slow = hs.wrap_model(model, [hs.default_settings(timeout=0.3)])
    assert await ask(slow, "x") == "timed out"
