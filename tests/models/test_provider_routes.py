"""Providers' own quirks on their own litellm routes: the same answer on every path, and a
typed error for anything litellm raises.

The OpenAI-compatible bodies of ``_quirks.py`` are replayed on the routes real servers are
reached by (``groq/``, ``mistral/``), whose streams litellm's provider code reads (helix has no
direct reader for them): through litellm's wrapper as it is, and lightened (helix's default).
"""

from __future__ import annotations

from typing import Any

import pytest

import helix_stream as hs
from helix_stream.models._litellm import translate_error
from tests.models._quirks import ROLE, chunk, sse
from tests.models._replay import ReplayServer, read_turn

# Groq's error event as its server sends it: the code is a word ("tool_use_failed"), which
# litellm's Groq code reads as an HTTP status (ValueError: invalid literal for int()).
GROQ_ERROR = sse(
    ROLE,
    chunk({"reasoning": "We need to call the tool."}),
    'event: error\ndata: {"error": {"message": "Tool call validation failed: parameters for tool '
    'lookup did not match schema", "type": "invalid_request_error", "code": "tool_use_failed", '
    '"failed_generation": "{}", "status_code": 400}}',
    done=False,
)

# Mistral's magistral: thinking as a content list of text blocks, then the answer; no
# reasoning tokens in the usage (litellm counts them from the thinking text).
MAGISTRAL = sse(
    chunk({"role": "assistant", "content": [
        {"type": "thinking", "thinking": [{"type": "text", "text": "The user asks for 2+2. "}]}]}),
    chunk({"content": [{"type": "thinking", "thinking": [
        {"type": "text", "text": "That is basic arithmetic, the answer is four."}]}]}),
    chunk({"content": "2 + 2 = 4"}),
    chunk({"content": ""}, "stop",
          usage={"prompt_tokens": 10, "completion_tokens": 40, "total_tokens": 50}),
)  # fmt: skip


def route(server: ReplayServer, model: str) -> dict[str, Any]:
    return {"model": model, "api_base": f"{server.base_url}/v1", "api_key": "replay-key"}


async def both_paths(replay: ReplayServer, model: str, body: bytes) -> Any:
    """The turn through litellm's wrapper as it is and lightened; both must be the same."""
    results = []
    for direct in (False, True):
        replay.bodies.append(body)
        results.append(await read_turn(route(replay, model), direct=direct, prompt="Hi"))
    assert results[0] == results[1]
    return results[1]


async def test_a_groq_error_event_is_a_typed_error_on_the_groq_route(
    replay: ReplayServer,
) -> None:
    kind, error_type, text = await both_paths(replay, "groq/openai/gpt-oss-120b", GROQ_ERROR)
    assert kind == "error" and issubclass(error_type, hs.errors.ModelError)
    assert error_type.code == "model_error" and not error_type.retryable
    assert "tool_use_failed" in text and "could not read" in text


async def test_a_mistral_content_list_reads_alike_on_the_mistral_route(
    replay: ReplayServer,
) -> None:
    _, steps = await both_paths(replay, "mistral/magistral-medium-latest", MAGISTRAL)
    step = steps[0]
    assert step.text == "2 + 2 = 4"
    assert step.reasoning == "The user asks for 2+2. That is basic arithmetic, the answer is four."
    # Counted from the thinking text once, as litellm's wrapper counts it.
    assert 10 < step.usage.reasoning_tokens < 40


def test_a_plain_error_of_the_callers_own_code_is_not_a_model_error() -> None:
    error = KeyError("mine")
    try:
        raise error
    except KeyError as exc:
        assert translate_error(exc) is error


@pytest.mark.parametrize("kind", [KeyError, ValueError, TypeError, IndexError, AttributeError])
def test_a_plain_error_litellm_raises_is_a_typed_model_error(kind: type[Exception]) -> None:
    import litellm

    namespace: dict[str, Any] = {"__name__": "litellm.fake_provider", "kind": kind}
    exec("def parse():\n    raise kind('odd shape')", namespace)  # a function of litellm's
    try:
        namespace["parse"]()
    except kind as exc:
        translated = translate_error(exc)
    assert type(translated) is hs.errors.ModelError and not translated.retryable
    assert f"{kind.__name__}: " in str(translated)
    assert litellm is not None
