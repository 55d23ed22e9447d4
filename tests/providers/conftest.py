"""Loopback servers for each provider family's wire format (real HTTP through litellm)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from helix_stream.models._family import Family
from helix_stream.models._litellm import load_litellm
from tests.providers._wire import WireServer
from tests.providers.anthropic_server import AnthropicServer
from tests.providers.bedrock_server import BedrockServer
from tests.providers.gemini_server import GeminiServer
from tests.providers.openai_server import OpenAIFormatServer


@dataclass
class Provider:
    """A family, a loopback server speaking its wire format, and litellm's arguments for it."""

    family: Family
    server: WireServer
    llm: dict[str, Any]


_SERVERS: dict[Family, tuple[Callable[[], WireServer], Callable[[Any], dict[str, Any]]]] = {
    "openai": (OpenAIFormatServer, lambda s: s.llm("openai/gpt-4o")),
    "anthropic": (AnthropicServer, lambda s: s.llm()),
    "bedrock": (BedrockServer, lambda s: s.llm()),
    "gemini": (GeminiServer, lambda s: s.llm()),
    "mistral": (OpenAIFormatServer, lambda s: s.llm("mistral/mistral-large-latest")),
}
FAMILY_IDS: list[Family] = list(_SERVERS)


@pytest.fixture(scope="session", autouse=True)
def _litellm_loaded() -> None:
    load_litellm()


@pytest.fixture
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    """The provider named by the test's ``family`` parameter (indirect parametrization)."""
    family: Family = request.param
    make, llm = _SERVERS[family]
    server = make().start()
    try:
        yield Provider(family=family, server=server, llm=llm(server))
    finally:
        server.stop()


@pytest.fixture
def anthropic() -> Iterator[AnthropicServer]:
    server = AnthropicServer().start()
    try:
        yield server
    finally:
        server.stop()
