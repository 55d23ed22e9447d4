"""Provider families from litellm's own provider resolution (README, per-provider table)."""

from __future__ import annotations

import pytest

from helix_stream.models._family import family_of, provider_family
from helix_stream.models._litellm import load_litellm


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o", "openai"),
        ("openai/gpt-4o", "openai"),
        ("azure/gpt-4o", "openai"),
        ("groq/llama-3.1-8b-instant", "openai"),
        ("openrouter/anthropic/claude-3.5-sonnet", "openai"),  # OpenRouter's wire is OpenAI's
        ("hosted_vllm/my-model", "openai"),
        ("helix/demo", "openai"),
        ("anthropic/claude-sonnet-4-5", "anthropic"),
        ("claude-sonnet-4-5", "anthropic"),
        ("vertex_ai/claude-sonnet-4-5", "anthropic"),
        ("azure_ai/claude-sonnet-4-5", "anthropic"),
        ("bedrock/invoke/anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic"),
        ("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock"),
        ("bedrock/converse/anthropic.claude-3-5-sonnet-20240620-v1:0", "bedrock"),
        ("bedrock/meta.llama3-8b-instruct-v1:0", "bedrock"),
        ("gemini/gemini-2.5-flash", "gemini"),
        ("vertex_ai/gemini-2.5-flash", "gemini"),
        ("gemini-2.5-flash", "gemini"),
        ("mistral/mistral-large-latest", "mistral"),
        ("codestral/codestral-latest", "mistral"),
        ("vertex_ai/mistral-large-2411", "mistral"),
        ("cohere/command-r", "other"),
        ("ollama_chat/llama3", "other"),
    ],
)
def test_families_follow_litellms_provider(model: str, family: str) -> None:
    load_litellm()  # registers helix/demo
    assert provider_family(model) == family


def test_a_model_litellm_cannot_place_is_other() -> None:
    assert provider_family("no-such-model-anywhere") == "other"


def test_an_explicit_custom_llm_provider_decides() -> None:
    assert provider_family("my-claude", custom_llm_provider="anthropic") == "anthropic"
    assert provider_family("my-model", custom_llm_provider="openai") == "openai"


def test_family_of_is_a_pure_table() -> None:
    assert family_of("bedrock", "invoke/meta.llama3", bedrock_route="invoke") == "other"
    assert family_of("vertex_ai", "meta/llama-3.1-405b") == "openai"
    assert family_of("fireworks_ai", "x", openai_compatible=frozenset({"fireworks_ai"})) == "openai"
    assert family_of("fireworks_ai", "x") == "other"
