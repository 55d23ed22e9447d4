"""A litellm Router (and litellm's ``fallbacks=``) on the model call path.

Two loopback servers are two deployments: the first answers 429, the answer must come from the
second, and the parsed response must name the deployment that answered. Requests are counted
on each server: the Router's own retries are off, so one policy decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from helix_stream import errors
from helix_stream.models._litellm import acompletion, litellm_module, supports_response_schema
from helix_stream.models._parse import StepParser
from helix_stream.models._retry import RetryPolicy, open_stream
from tests.loopback import LoopbackServer, error, text

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def pair() -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    a, b = LoopbackServer().start(), LoopbackServer().start()
    yield a, b
    a.stop()
    b.stop()


def deployment(name: str, model: str, server: LoopbackServer, dep_id: str) -> dict[str, Any]:
    return {
        "model_name": name,
        "litellm_params": {"model": model, "api_base": server.api_base, "api_key": f"sk-{dep_id}"},
        "model_info": {"id": dep_id},
    }


def router(*deployments: dict[str, Any], **kw: Any) -> Any:
    return litellm_module().Router(model_list=list(deployments), **kw)


async def parse(first: Any, stream: Any) -> StepParser:
    parser = StepParser(0)
    if first is not None:
        parser.feed(first)
    async for raw in stream:
        parser.feed(raw)
    return parser


async def test_router_fallback_answers_and_the_response_names_that_deployment(
    pair: tuple[LoopbackServer, LoopbackServer],
) -> None:
    a, b = pair
    a.script(*[error(429, "slow down")] * 5)
    b.script(text("from b"))
    # The Router asks for 3 retries of its own: they must not multiply with the policy's.
    r = router(
        deployment("fast", "openai/model-a", a, "dep-a"),
        deployment("slow", "openai/model-b", b, "dep-b"),
        fallbacks=[{"fast": ["slow"]}],
        num_retries=3,
    )

    async def send(params: dict[str, Any]) -> Any:
        return await acompletion(router=r, **params)

    params = {"model": "fast", "messages": MESSAGES, "stream": True}
    first, stream = await open_stream(send, params, RetryPolicy(initial_delay=0.001))
    parser = await parse(first, stream)
    assert "".join(parser.text) == "from b"
    assert parser.response_model == "model-b"
    assert parser.response is not None
    assert parser.response.deployment_id == "dep-b"
    assert parser.response.api_base == b.api_base
    assert parser.response.provider == "openai"
    assert parser.response.id == "chatcmpl-loopback"
    assert (len(a.requests), len(b.requests)) == (1, 1)


async def test_litellm_fallbacks_param_works_through_a_router_and_without_one(
    pair: tuple[LoopbackServer, LoopbackServer],
) -> None:
    a, b = pair
    a.script(error(429), error(429))
    b.script(text("one"), text("two"))
    r = router(
        deployment("fast", "openai/model-a", a, "dep-a"),
        deployment("slow", "openai/model-b", b, "dep-b"),
    )

    async def via_router(params: dict[str, Any]) -> Any:
        return await acompletion(router=r, **params)

    params = {"model": "fast", "messages": MESSAGES, "stream": True, "fallbacks": ["slow"]}
    parser = await parse(*await open_stream(via_router, params, RetryPolicy(max_retries=0)))
    assert ("".join(parser.text), parser.response_model) == ("one", "model-b")

    async def direct(params: dict[str, Any]) -> Any:
        return await acompletion(**params)

    params = {
        "model": "openai/model-a",
        "api_base": a.api_base,
        "api_key": "sk-a",
        "messages": MESSAGES,
        "stream": True,
        "fallbacks": [{"model": "openai/model-b", "api_base": b.api_base, "api_key": "sk-b"}],
    }
    parser = await parse(*await open_stream(direct, params, RetryPolicy(max_retries=0)))
    assert ("".join(parser.text), parser.response_model) == ("two", "model-b")
    assert parser.response is not None and parser.response.api_base == b.api_base
    assert (len(a.requests), len(b.requests)) == (2, 2)


async def test_a_retry_is_routed_again_within_a_load_balanced_group(
    pair: tuple[LoopbackServer, LoopbackServer],
) -> None:
    a, b = pair
    a.script(*[error(429)] * 5)
    b.script(*[text("from b")] * 5)
    r = router(
        deployment("chat", "openai/model-a", a, "dep-a"),
        deployment("chat", "openai/model-b", b, "dep-b"),
    )

    async def send(params: dict[str, Any]) -> Any:
        return await acompletion(router=r, **params)

    params = {"model": "chat", "messages": MESSAGES, "stream": True}
    parser = await parse(*await open_stream(send, params, RetryPolicy(initial_delay=0.001)))
    assert parser.response is not None and parser.response.deployment_id == "dep-b"
    assert len(a.requests) <= 1 and len(b.requests) == 1


async def test_a_router_without_a_fallback_retries_once_per_policy_attempt(
    loopback: LoopbackServer,
) -> None:
    loopback.script(*[error(429)] * 6)
    r = router(deployment("fast", "openai/model-a", loopback, "dep-a"), num_retries=3)

    async def send(params: dict[str, Any]) -> Any:
        return await acompletion(router=r, **params)

    params = {"model": "fast", "messages": MESSAGES, "stream": True}
    with pytest.raises(errors.ModelRateLimitError):
        await open_stream(send, params, RetryPolicy(max_retries=1, initial_delay=0.001))
    assert len(loopback.requests) == 2


async def test_a_deployment_key_the_provider_echoes_is_redacted(loopback: LoopbackServer) -> None:
    key = "sk-router-SECRET-41f"
    loopback.script(error(401, f"Incorrect API key provided: {key}."))
    r = router(
        {
            "model_name": "fast",
            "litellm_params": {"model": "openai/m", "api_base": loopback.api_base, "api_key": key},
        }
    )

    async def send(params: dict[str, Any]) -> Any:
        return await acompletion(router=r, **params)

    with pytest.raises(errors.ModelAuthError) as info:
        await open_stream(send, {"model": "fast", "messages": MESSAGES, "stream": True})
    assert key not in info.value.message and key not in str(info.value)
    assert "Incorrect API key provided: [REDACTED]" in info.value.message


def test_response_schema_support_follows_litellms_model_map(loopback: LoopbackServer) -> None:
    assert supports_response_schema("openai/gpt-4o-mini") is True
    assert supports_response_schema("openai/loopback") is False
    assert supports_response_schema("helix/demo") is False
    both = router(
        deployment("g", "openai/gpt-4o-mini", loopback, "x"),
        deployment("g", "openai/gpt-4o", loopback, "y"),
        deployment("mixed", "openai/gpt-4o", loopback, "z"),
        deployment("mixed", "openai/loopback", loopback, "w"),
    )
    assert supports_response_schema("g", router=both) is True
    assert supports_response_schema("mixed", router=both) is False
    assert supports_response_schema("no-such-group", router=both) is False
