"""GenAI semantic-convention attributes built from the loop's values (pure, no OpenTelemetry).

Names follow the OpenTelemetry GenAI semantic conventions as the
``opentelemetry-semantic-conventions`` package 0.66b2 spells them (schema 1.37+): usage with
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.input_tokens`` and
``gen_ai.usage.reasoning.output_tokens``; ``gen_ai.response.id``; ``server.address`` and
``server.port``; ``gen_ai.system_instructions`` (the system prompt, kept out of
``gen_ai.input.messages``). MCP calls add the MCP conventions' client attributes
(``mcp.method.name``, ``mcp.protocol.version``, ``mcp.session.id``, ``network.transport``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from ._filters import AttributeValue

__all__ = [
    "mcp_attributes",
    "provider_name",
    "response_attributes",
    "server_attributes",
    "split_system",
    "system_parts",
    "usage_attributes",
]

# litellm provider prefixes whose gen_ai.provider.name is a semconv well-known value; any
# other prefix is used as it is ("openai", "anthropic", "groq", "helix" for the demo).
_PROVIDERS = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "cohere_chat": "cohere",
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "vertex_ai_beta": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "watsonx": "ibm.watsonx.ai",
    "xai": "x_ai",
}
_BARE_MODELS = (("claude", "anthropic"), ("gemini", "gcp.gemini"))


def provider_name(model: str) -> tuple[str, str]:
    """``(gen_ai.provider.name, gen_ai.request.model)`` from a litellm model string."""
    prefix, sep, rest = model.partition("/")
    if sep:
        return _PROVIDERS.get(prefix, prefix), rest
    for start, provider in _BARE_MODELS:
        if model.startswith(start):
            return provider, model
    return "openai", model  # litellm's own default for a bare model name


def semconv_provider(litellm_provider: str) -> str:
    """litellm's provider name (``custom_llm_provider``) as ``gen_ai.provider.name``."""
    return _PROVIDERS.get(litellm_provider, litellm_provider)


def usage_attributes(usage: Any) -> dict[str, AttributeValue]:
    """A ``Usage`` as ``gen_ai.usage.*``; the cache and reasoning counts only when reported."""
    attrs: dict[str, AttributeValue] = {
        "gen_ai.usage.input_tokens": int(getattr(usage, "input_tokens", 0)),
        "gen_ai.usage.output_tokens": int(getattr(usage, "output_tokens", 0)),
    }
    optional = (
        ("cached_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
        ("cache_creation_input_tokens", "gen_ai.usage.cache_creation.input_tokens"),
        ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
    )
    for field, name in optional:
        value = int(getattr(usage, field, 0) or 0)
        if value:
            attrs[name] = value
    return attrs


_DEFAULT_PORTS = {"http": 80, "https": 443}


def server_attributes(api_base: Any) -> dict[str, AttributeValue]:
    """``server.address`` and ``server.port`` of an ``api_base`` URL (nothing else of it: a
    URL may carry credentials in its user info or query)."""
    if not isinstance(api_base, str) or not api_base:
        return {}
    try:
        parts = urlsplit(api_base)
        host, port = parts.hostname, parts.port
    except ValueError:
        return {}
    if not host:
        return {}
    port = port if port is not None else _DEFAULT_PORTS.get(parts.scheme.lower())
    attrs: dict[str, AttributeValue] = {"server.address": host}
    if port is not None:
        attrs["server.port"] = port
    return attrs


def response_attributes(response: Any) -> dict[str, AttributeValue]:
    """What the stream said about who answered (a ``ResponseInfo``), as span attributes."""
    if response is None:
        return {}
    attrs: dict[str, AttributeValue] = {}
    response_id = getattr(response, "id", None)
    if isinstance(response_id, str) and response_id:
        attrs["gen_ai.response.id"] = response_id
    provider = getattr(response, "provider", None)
    if isinstance(provider, str) and provider:
        attrs["gen_ai.provider.name"] = semconv_provider(provider)
    deployment = getattr(response, "deployment_id", None)
    if isinstance(deployment, str) and deployment:
        attrs["helix.response.deployment_id"] = deployment
    attrs.update(server_attributes(getattr(response, "api_base", None)))
    return attrs


def split_system(messages: Sequence[Any]) -> tuple[str | None, Sequence[Any]]:
    """The request's system prompt (its first message, when that is a system message) and the
    other messages. Later system messages (context rows on some providers) stay messages."""
    if messages and isinstance(messages[0], Mapping) and messages[0].get("role") == "system":
        content = messages[0].get("content")
        if isinstance(content, list):
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
        return (str(content) if content is not None else None), messages[1:]
    return None, messages


def system_parts(system: str) -> list[dict[str, Any]]:
    """``gen_ai.system_instructions``: the system prompt as a list of text parts."""
    return [{"type": "text", "content": system}]


def mcp_attributes(
    *,
    method: str,
    transport: Literal["stdio", "http", "sse"],
    server: str,
    url: str | None = None,
    protocol_version: str | None = None,
    session_id: str | None = None,
    tool: str | None = None,
) -> dict[str, AttributeValue]:
    """The MCP client attributes of one request (semconv "Model Context Protocol").

    ``network.transport`` is ``pipe`` for stdio and ``tcp`` over HTTP, which also gets
    ``network.protocol.name`` and the URL's ``server.address``/``server.port`` (nothing else of
    the URL). ``mcp.session.id`` is recorded as the first 32 hex digits of its SHA-256: a
    session id lets whoever holds it inject into the session, and a telemetry backend is no
    place for one; the digest still tells sessions apart. ``helix.mcp.server.name`` is the
    server's name in this app, ``helix.mcp.tool.name`` the tool's name on the server (the
    offered name, with its prefix, is ``gen_ai.tool.name``).

    Example::

        attributes = mcp_attributes(method="tools/call", transport="stdio", server="weather",
                                    tool="forecast")
        assert attributes["network.transport"] == "pipe"
    """
    attrs: dict[str, AttributeValue] = {
        "mcp.method.name": method,
        "network.transport": "pipe" if transport == "stdio" else "tcp",
        "helix.mcp.server.name": server,
    }
    if transport != "stdio":
        attrs["network.protocol.name"] = "http"
        attrs.update(server_attributes(url))
    if protocol_version:
        attrs["mcp.protocol.version"] = protocol_version
    if session_id:
        attrs["mcp.session.id"] = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    if tool is not None:
        attrs["helix.mcp.tool.name"] = tool
    return attrs
