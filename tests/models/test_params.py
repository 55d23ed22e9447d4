"""A wrong argument is a programming error, refused before any request; never a model outage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream import errors
from helix_stream.loop._params import check_params
from helix_stream.models._litellm import acompletion, is_litellm_param, litellm_module
from tests.loopback import LoopbackServer, error


class Answer(BaseModel):
    city: str


@pytest.mark.parametrize(
    ("name", "where", "says"),
    [
        (
            "output_schema",
            "stream_text",
            "belongs to Agent(...); stream_text()/generate_text() take output=",
        ),
        (
            "output",
            "Agent.settings",
            "belongs to stream_text()/generate_text(); an Agent takes output_schema=",
        ),
        ("max_steps", "generate_text", "stop_when=hs.step_count_is(n)"),
        ("step_context", "stream_text", "belongs to Agent(...)"),
        ("router", "Agent.settings", "as router="),
        ("tools_context", "Agent.settings", "Executor.run()"),
        ("system", "Agent.settings", "stream_text()/generate_text() or Agent(...)"),
    ],
)
def test_a_helix_keyword_in_the_wrong_place_says_where_it_belongs(
    name: str, where: Any, says: str
) -> None:
    with pytest.raises(errors.InvalidRequestError) as info:
        check_params({"temperature": 0.1, name: Answer}, where=where)
    message = info.value.message
    assert message.startswith(f"{name}= (") and says in message and "Nothing was sent" in message
    assert info.value.retryable is False and info.value.http_status == 400


def test_litellms_own_retry_knobs_point_to_max_retries() -> None:
    with pytest.raises(errors.InvalidRequestError) as info:
        check_params({"num_retries": 3})
    assert "num_retries=3" in info.value.message and "max_retries=" in info.value.message
    for value in (0, 5):  # even 0: the policy's own default would silently replace it
        with pytest.raises(errors.InvalidRequestError):
            check_params({"max_retries": value}, where="Agent(settings=...)")


def test_a_class_as_a_value_is_refused_except_a_pydantic_response_format() -> None:
    with pytest.raises(errors.InvalidRequestError) as info:
        check_params({"user": Answer})
    assert "user=" in info.value.message and "class Answer" in info.value.message
    check_params({"response_format": Answer})


def test_litellm_timeout_in_settings_points_to_the_run_option() -> None:
    # timeout= is the run's (hs.Timeout); litellm's own would be a second, silent limit.
    with pytest.raises(errors.InvalidRequestError) as info:
        check_params({"timeout": 30.0}, where="Agent(settings=...)")
    assert "time limits" in info.value.message and "as timeout=" in info.value.message


def test_values_litellm_would_send_must_be_json_once_litellm_is_loaded() -> None:
    litellm_module()
    params: dict[str, Any] = {
        "temperature": 0.2,
        "metadata": {"trace": object()},  # litellm's own: never sent to the provider
        "stream_timeout": 30.0,
        "messages": [{"role": "user", "content": "hi"}],
        "extra_body": {"top_k": 3},
    }
    check_params(params, is_litellm_param=is_litellm_param)
    check_params({"user_tag": object()})  # names only without litellm: nothing to say
    with pytest.raises(errors.InvalidRequestError) as info:
        check_params({"user_tag": object()}, is_litellm_param=is_litellm_param)
    assert info.value.message.startswith("user_tag= cannot be sent to the model")
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    with pytest.raises(errors.InvalidRequestError):
        check_params({"extra_body": loop}, is_litellm_param=is_litellm_param)


async def test_prepare_step_overrides_keep_their_own_keys_and_refuse_a_misplaced_one(
    loopback: LoopbackServer,
) -> None:
    # The loop's own keys are taken out first; what is left must be a litellm param.
    def own_keys(step: hs.StepInput) -> dict[str, Any]:
        return {"system": "s", "active_tools": [], "temperature": 0}

    assert await hs.stream_text(**loopback.llm(), prompt="x", prepare_step=own_keys).text()
    sent_body = json.loads(loopback.requests[-1])
    assert sent_body["temperature"] == 0
    assert sent_body["messages"][0] == {"role": "system", "content": "s"}
    sent = len(loopback.requests)

    def misplaced(step: hs.StepInput) -> dict[str, Any]:
        return {"output_schema": Answer}

    with pytest.raises(errors.InvalidRequestError) as info:
        await hs.stream_text(**loopback.llm(), prompt="x", prepare_step=misplaced).text()
    assert info.value.message.startswith("output_schema= (the structured output of an Agent)")
    assert len(loopback.requests) == sent  # refused before the request


async def test_a_keyword_that_belongs_to_agent_is_refused_when_stream_text_is_called(
    loopback: LoopbackServer,
) -> None:
    # The fault of issue 16: it travelled to litellm and came back as a retryable
    # ModelUnavailableError ("Object of type ModelMetaclass is not JSON serializable").
    with pytest.raises(errors.InvalidRequestError) as info:
        hs.stream_text(**loopback.llm(), prompt="x", output_schema=Answer)
    assert "output_schema= (the structured output of an Agent)" in info.value.message
    assert "stream_text()/generate_text() take output=" in info.value.message
    with pytest.raises(errors.InvalidRequestError):
        hs.stream_text(**loopback.llm(), prompt="x", num_retries=2)
    with pytest.raises(errors.InvalidRequestError) as info:
        hs.Agent(name="a", settings={"output_schema": Answer})
    assert "Agent(settings=...)" in info.value.message
    assert loopback.requests == []


async def test_an_unsendable_value_is_refused_before_the_request_as_a_run_error(
    loopback: LoopbackServer,
) -> None:
    # A parameter litellm knows (an unknown one is refused at the call: test_strict_keywords).
    result = hs.stream_text(**loopback.llm(), prompt="x", logit_bias={"1": object()})  # type: ignore[dict-item]
    chunks = [chunk async for chunk in result]
    assert type(chunks[-1]).__name__ == "ErrorChunk"
    with pytest.raises(errors.InvalidRequestError) as info:
        await result.text()
    assert info.value.message.startswith("logit_bias= cannot be sent to the model")
    assert info.value.retryable is False
    assert loopback.requests == []


async def test_a_local_type_error_under_litellm_is_never_a_provider_failure(
    loopback: LoopbackServer,
) -> None:
    # Past every check (a direct call): litellm reports json.dumps' TypeError as a 500.
    with pytest.raises(errors.InvalidRequestError) as info:
        await acompletion(
            **loopback.llm(), messages=[{"role": "user", "content": "x"}], user_tag=object()
        )
    assert not isinstance(info.value, errors.ModelError)
    assert info.value.retryable is False
    assert "not JSON serializable" in info.value.message
    assert "not a provider failure" in info.value.message
    assert loopback.requests == []


async def test_a_key_the_provider_echoes_is_redacted_from_model_auth_error(
    loopback: LoopbackServer,
) -> None:
    key = "sk-SECRET-echoed-7d1"
    loopback.script(error(401, f"Incorrect API key provided: {key}. Find your key at ..."))
    with pytest.raises(errors.ModelAuthError) as info:
        await hs.generate_text(**{**loopback.llm(), "api_key": key}, prompt="x")
    assert key not in info.value.message and key not in str(info.value)
    assert "Incorrect API key provided: [REDACTED]" in info.value.message
    assert info.value.to_dict()["error"]["code"] == "model_auth_error"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (502, errors.ModelUnavailableError),
        (503, errors.ModelUnavailableError),
        (500, errors.ModelUnavailableError),
        (429, errors.ModelRateLimitError),
        (400, errors.ModelBadRequestError),
        (404, errors.ModelBadRequestError),
        (403, errors.ModelAuthError),
    ],
    ids=lambda v: str(v) if isinstance(v, int) else v.__name__,
)
async def test_provider_statuses_map_to_the_error_tree(
    loopback: LoopbackServer, status: int, expected: type[errors.ModelError]
) -> None:
    loopback.script(*[error(status, "scripted")] * 3)
    with pytest.raises(expected) as info:
        await hs.generate_text(**loopback.llm(), prompt="x", max_retries=0)
    # The most specific helix class (the error is also litellm's class: a combined subclass).
    helix = next(k for k in type(info.value).__mro__ if getattr(errors, k.__name__, None) is k)
    assert helix is expected
    assert info.value.retryable is (status in (429, 500, 502, 503))
