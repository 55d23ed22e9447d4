"""Strict keywords: nothing unknown reaches a provider.

A keyword that is neither a run option nor a parameter litellm knows is a ``TypeError`` at the
call, naming the closest known name, and the model server receives nothing (litellm would have
put it into the request body: a misspelt ``tool_context=`` would send a tool's API key).
litellm's own parameters and ``provider_options`` still reach the request body's bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from tests.loopback import LoopbackServer, text

SECRET = "sk-weather-secret-123"

# (the keyword given, the name the message must point to)
MISSPELLINGS = [
    ("tool_context", "tools_context"),
    ("runtime_ctx", "runtime_context"),
    ("temprature", "temperature"),
]


class WeatherContext(BaseModel):
    api_key: str


class City(BaseModel):
    city: str


@hs.tool(context_schema=WeatherContext)
def get_weather(input: City, ctx: hs.ToolContext[WeatherContext]) -> str:
    """The weather."""
    return "sunny"


def _value(name: str) -> Any:
    return 0.5 if name == "temprature" else {"get_weather": {"api_key": SECRET}}


def _run_executor(loopback: LoopbackServer, name: str) -> Any:
    llm = loopback.llm()
    agent = hs.Agent(name="a", model=llm.pop("model"), settings=llm)
    return hs.Executor().run(agent, "s", "hi", **{name: _value(name)})


CALLS: dict[str, Callable[[LoopbackServer, str], Any]] = {
    "stream_text": lambda lb, name: hs.stream_text(**lb.llm(), prompt="hi", **{name: _value(name)}),
    "Executor.run": _run_executor,
    "Agent": lambda lb, name: hs.Agent(name="a", **{name: _value(name)}),
    "Agent(settings=...)": lambda lb, name: hs.Agent(
        name="a", model="openai/loopback", settings={"api_base": lb.api_base, name: _value(name)}
    ),
}


@pytest.mark.parametrize("where", sorted(CALLS))
@pytest.mark.parametrize(("given", "meant"), MISSPELLINGS, ids=[m[0] for m in MISSPELLINGS])
async def test_a_misspelt_keyword_is_refused_naming_the_right_one_and_nothing_is_sent(
    loopback: LoopbackServer, where: str, given: str, meant: str
) -> None:
    loopback.script(text("never"))
    with pytest.raises(TypeError) as info:
        CALLS[where](loopback, given)
    message = str(info.value)
    assert repr(given) in message and f"did you mean `{meant}`?" in message
    assert SECRET not in message
    assert loopback.requests == []


@pytest.mark.parametrize(("given", "meant"), MISSPELLINGS, ids=[m[0] for m in MISSPELLINGS])
async def test_generate_text_refuses_it_too(
    loopback: LoopbackServer, given: str, meant: str
) -> None:
    with pytest.raises(TypeError, match=f"did you mean `{meant}`"):
        await hs.generate_text(**loopback.llm(), prompt="hi", **{given: _value(given)})
    assert loopback.requests == []


async def test_a_known_litellm_parameter_and_provider_options_reach_the_request_body(
    loopback: LoopbackServer,
) -> None:
    loopback.script(text("ok"))
    result = hs.stream_text(
        **loopback.llm(),
        prompt="hi",
        seed=7,  # an OpenAI chat parameter, as litellm lists it
        provider_options={"top_k": 3, "safe_mode": True},
    )
    assert await result.text() == "ok"
    [raw] = loopback.requests
    body = json.loads(raw)
    assert body["seed"] == 7 and body["top_k"] == 3 and body["safe_mode"] is True
    assert b'"top_k": 3' in raw or b'"top_k":3' in raw


async def test_an_agents_provider_options_merge_under_the_runs(loopback: LoopbackServer) -> None:
    llm = loopback.llm()
    agent = hs.Agent(
        name="a",
        model=llm.pop("model"),
        settings=llm,
        provider_options={"top_k": 3, "safe_mode": True},
    )
    loopback.script(text("ok"))
    await hs.Executor().run(agent, "s", "hi", provider_options={"top_k": 5}).consume()
    [body] = loopback.bodies()
    assert body["top_k"] == 5 and "safe_mode" not in body  # a run's option replaces the agent's


def test_a_keyword_with_nothing_close_is_refused_without_a_guess() -> None:
    with pytest.raises(TypeError) as info:
        hs.stream_text(model="helix/demo", prompt="hi", zzqqxx=1)  # type: ignore[call-arg]
    assert "'zzqqxx'" in str(info.value) and "did you mean" not in str(info.value)


async def test_a_misspelt_prepare_step_override_fails_the_run_before_its_call(
    loopback: LoopbackServer,
) -> None:
    loopback.script(text("never"))
    result = hs.stream_text(
        **loopback.llm(), prompt="hi", prepare_step=lambda step: {"temprature": 0.1}
    )
    with pytest.raises(TypeError, match="did you mean `temperature`"):
        await result.text()
    assert loopback.requests == []


def test_provider_credentials_litellm_lists_are_known() -> None:
    from helix_stream.loop._params import litellm_param_names

    known = litellm_param_names("bedrock/anthropic.claude-3-haiku-20240307-v1:0")
    assert {"aws_region_name", "aws_profile_name", "vertex_project", "drop_params"} <= known
    assert {"tool_context", "runtime_ctx", "temprature", "extra_body"}.isdisjoint(known)


def test_extra_body_points_to_provider_options() -> None:
    with pytest.raises(TypeError, match="did you mean `provider_options`"):
        hs.stream_text(model="helix/demo", prompt="hi", extra_body={"top_k": 3})  # type: ignore[call-arg]
