"""Provider families: which wire format a model string ends up on, and what that means here.

litellm sends one OpenAI-format request to many wire formats. What matters to context rows and
prompt caching is the format, not the vendor, so models are grouped by it (litellm's
``get_llm_provider`` decides; see the README's per-provider table):

========== ================================================ ========= ==============
family     litellm providers                                row form  cache markers
========== ================================================ ========= ==============
openai     openai, azure, OpenAI-compatible servers,        system    none (implicit)
           openrouter, databricks, custom providers
anthropic  anthropic, vertex_ai/claude-*, azure_ai/claude-*,  user      4
           bedrock/invoke/anthropic.*
bedrock    bedrock (Converse)                               user      4
gemini     gemini, vertex_ai (Gemini models)                user      none (implicit)
mistral    mistral, codestral, vertex_ai/mistral-*          user      none
other      anything else (cohere, ollama, huggingface, ...) user      none
========== ================================================ ========= ==============

"Row form" is how ``app`` and ``hook`` rows are sent: a mid-conversation system message where
the wire format keeps one in place, else a user-turn envelope that helix owns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

__all__ = [
    "FAMILIES",
    "Family",
    "FamilyTraits",
    "family_of",
    "params_family",
    "provider_family",
    "traits",
]

Family = Literal["openai", "anthropic", "bedrock", "gemini", "mistral", "other"]
FAMILIES: tuple[Family, ...] = ("openai", "anthropic", "bedrock", "gemini", "mistral", "other")


@dataclass(frozen=True, slots=True, kw_only=True)
class FamilyTraits:
    """What a family's wire format needs.

    Attributes:
        row_form: ``"system"`` when app and hook rows can stay mid-conversation system
            messages on this wire format, ``"user"`` when they are sent as user-turn envelopes.
        max_breakpoints: How many cache markers a request may carry; 0 where the provider
            caches implicitly (or not at all) and takes no markers.
    """

    row_form: Literal["system", "user"]
    max_breakpoints: int


_TRAITS: dict[Family, FamilyTraits] = {
    "openai": FamilyTraits(row_form="system", max_breakpoints=0),
    "anthropic": FamilyTraits(row_form="user", max_breakpoints=4),
    "bedrock": FamilyTraits(row_form="user", max_breakpoints=4),
    "gemini": FamilyTraits(row_form="user", max_breakpoints=0),
    "mistral": FamilyTraits(row_form="user", max_breakpoints=0),
    "other": FamilyTraits(row_form="user", max_breakpoints=0),
}

# Providers that send the OpenAI chat format as it is (besides litellm's own list of
# OpenAI-compatible providers and custom providers, which the adapter adds).
_OPENAI_WIRE = frozenset(
    {"openai", "azure", "custom_openai", "openai_like", "openrouter", "databricks", "helix"}
)
_MISTRAL_WIRE = frozenset({"mistral", "codestral"})
# vertex_ai partner models served in the OpenAI format (litellm's partner-model prefixes).
_VERTEX_OPENAI_PREFIXES = (
    "meta/",
    "llama",
    "deepseek-ai",
    "qwen",
    "openai/gpt-oss-",
    "minimaxai/",
    "moonshotai/",
    "zai-org/",
    "google/gemma-",
    "jamba",
)


def traits(family: Family) -> FamilyTraits:
    """The :class:`FamilyTraits` of ``family``."""
    return _TRAITS[family]


def family_of(
    provider: str,
    model: str,
    *,
    bedrock_route: str | None = None,
    openai_compatible: frozenset[str] = frozenset(),
) -> Family:
    """The family of litellm's ``(model, provider)`` pair (pure; see the module table).

    Args:
        provider: litellm's provider name (``get_llm_provider``'s second value).
        model: The model name without the provider prefix.
        bedrock_route: litellm's Bedrock route (``"converse"``, ``"invoke"``, ...).
        openai_compatible: litellm's OpenAI-compatible providers and custom providers.
    """
    name = model.lower()
    if provider in _MISTRAL_WIRE:
        return "mistral"
    if provider == "anthropic":
        return "anthropic"
    if provider == "azure_ai":  # Claude on Azure AI Foundry speaks Anthropic's format
        return "anthropic" if name.startswith("claude") else "openai"
    if provider in _OPENAI_WIRE or provider in openai_compatible:
        return "openai"
    if provider == "bedrock":
        if bedrock_route == "converse":
            return "bedrock"
        is_claude = "anthropic." in name or name.startswith("anthropic")
        return "anthropic" if bedrock_route == "invoke" and is_claude else "other"
    if provider in ("gemini", "vertex_ai_beta"):
        return "gemini"
    if provider == "vertex_ai":
        if name.startswith("claude"):
            return "anthropic"
        if name.startswith(("mistral", "codestral")):
            return "mistral"
        if name.startswith(_VERTEX_OPENAI_PREFIXES):
            return "openai"
        return "gemini"
    return "other"


@lru_cache(maxsize=512)
def provider_family(
    model: str, *, custom_llm_provider: str | None = None, api_base: str | None = None
) -> Family:
    """The family a litellm model string is sent as (litellm's ``get_llm_provider`` decides).

    A model string litellm cannot place is ``"other"`` (the call itself will fail with
    litellm's own error). Imports litellm on first use.

    Example::

        provider_family("anthropic/claude-sonnet-4-5")   # "anthropic"
        provider_family("gpt-4o")                        # "openai"
    """
    from ._litellm import llm_provider

    found = llm_provider(model, custom_llm_provider=custom_llm_provider, api_base=api_base)
    if found is None:
        return "other"
    return family_of(
        found.provider,
        found.model,
        bedrock_route=found.bedrock_route,
        openai_compatible=found.openai_compatible,
    )


async def params_family(model: str, params: Mapping[str, Any]) -> Family:
    """:func:`provider_family` of ``model`` with the litellm ``params`` that can move it to
    another provider (``custom_llm_provider``, ``api_base``); imports litellm off the event
    loop if it is not loaded yet."""
    from ._litellm import ensure_litellm

    await ensure_litellm()
    return provider_family(
        model,
        custom_llm_provider=params.get("custom_llm_provider"),
        api_base=params.get("api_base") or params.get("base_url"),
    )
