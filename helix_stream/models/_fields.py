"""Reading litellm's streaming objects by attribute, fast: a field, the usage, who answered.

litellm's streamed objects are pydantic models that keep most fields in
``__pydantic_extra__`` and delete unset ones, so an ordinary ``getattr`` of a missing field
costs an exception: this module's :func:`read_field` is the one way the stream readers read
them (litellm is not imported here). :func:`read_usage` turns litellm's usage into
:class:`~helix_stream.chunks.Usage`, the same figures on every read path; :class:`ResponseInfo`
is who answered a call, read from its first chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..chunks import Usage

__all__ = ["ResponseInfo", "has_content", "read_field", "read_usage", "response_info"]


_MISSING = object()


_CONTENT_FIELDS = ("content", "reasoning_content", "refusal", "tool_calls")


def has_content(raw: Any) -> bool:
    """A streamed chunk carries content (text, reasoning, a refusal, tool calls): what the
    ``first_chunk`` limit waits for. A role-only or empty delta, a finish reason or usage
    alone do not count."""
    choices = read_field(raw, "choices")
    if not choices:
        return False
    delta = read_field(choices[0], "delta")
    return delta is not None and any(read_field(delta, name) for name in _CONTENT_FIELDS)


def read_field(obj: Any, name: str) -> Any:
    """``getattr(obj, name, None)``, fast for litellm's pydantic objects.

    litellm keeps most streamed fields in ``__pydantic_extra__`` and *deletes* unset ones, so a
    plain ``getattr`` of a missing field goes through pydantic's ``__getattr__`` and an
    exception — microseconds per chunk, on the hot path. Dict lookups first; the ordinary
    lookup only for what the class itself declares, or for objects without a ``__dict__``.
    """
    values = getattr(obj, "__dict__", None)
    if values is None:
        return getattr(obj, name, None)
    value = values.get(name, _MISSING)
    if value is not _MISSING:
        return value
    cls = type(obj)
    extra = obj.__pydantic_extra__ if _declares(cls, "__pydantic_extra__") else None
    if extra:
        value = extra.get(name, _MISSING)
        if value is not _MISSING:
            return value
    return getattr(obj, name, None) if _declares(cls, name) else None


_DECLARED: dict[type, dict[str, bool]] = {}


def _declares(cls: type, name: str) -> bool:
    """Whether ``cls`` itself has ``name`` (cached per class: a class does not change; keyed
    by class, then name, so that a lookup on the hot path allocates nothing)."""
    known = _DECLARED.get(cls)
    if known is None:
        known = _DECLARED[cls] = {}
    found = known.get(name)
    if found is None:
        found = known[name] = hasattr(cls, name)
    return found


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseInfo:
    """Who answered a model call, as litellm reports it on the stream's first chunk.

    Attributes:
        id: The provider's response id (``gen_ai.response.id``).
        model: The model that answered, as litellm names it (for a Router, the deployment's
            model: a fallback's model when a fallback answered).
        provider: litellm's provider name for it (``openai``, ``anthropic``, ...).
        deployment_id: The Router deployment that answered (its ``model_info.id``, or the
            id litellm derived for it); ``None`` without a Router.
        api_base: The URL the request went to, when litellm reports it.
    """

    id: str | None = None
    model: str | None = None
    provider: str | None = None
    deployment_id: str | None = None
    api_base: str | None = None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def read_usage(usage: Any) -> Usage:
    """litellm's usage object (or dict) as a :class:`~helix_stream.chunks.Usage`.

    Cached input tokens come from ``prompt_tokens_details.cached_tokens`` (OpenAI, and where
    litellm maps Anthropic's and DeepSeek's counters), else Anthropic's
    ``cache_read_input_tokens``; cache writes from Anthropic's ``cache_creation_input_tokens``
    (litellm also copies them to ``prompt_tokens_details.cache_write_tokens``); reasoning
    tokens from ``completion_tokens_details.reasoning_tokens``. Absent counters are 0.

    ``total_tokens`` is ``input_tokens + output_tokens``, as litellm's stream wrapper computes
    it, whatever total the provider sent (xAI's counts reasoning tokens that are not in its
    ``completion_tokens``): the same figure on every path.
    """
    get = usage.get if isinstance(usage, dict) else (lambda name: read_field(usage, name))
    prompt = get("prompt_tokens_details")
    completion = get("completion_tokens_details")
    pget = _getter(prompt)
    cached = _int(pget("cached_tokens")) or _int(get("cache_read_input_tokens"))
    created = _int(get("cache_creation_input_tokens")) or _int(pget("cache_write_tokens"))
    prompt_tokens, completion_tokens = _int(get("prompt_tokens")), _int(get("completion_tokens"))
    return Usage(
        input_tokens=prompt_tokens,
        output_tokens=completion_tokens,
        total_tokens=prompt_tokens + completion_tokens,
        cached_input_tokens=cached,
        cache_creation_input_tokens=created,
        reasoning_tokens=_int(_getter(completion)("reasoning_tokens")),
    )


def _getter(obj: Any) -> Any:
    if obj is None:
        return lambda name: None
    if isinstance(obj, dict):
        return obj.get
    return lambda name: read_field(obj, name)


def _hidden_params(raw: Any) -> dict[str, Any]:
    """litellm's ``_hidden_params`` of a chunk (a pydantic private attribute: read from the
    private dict, which skips pydantic's slow attribute path)."""
    private = getattr(raw, "__pydantic_private__", None)
    hidden = private.get("_hidden_params") if isinstance(private, dict) else None
    if hidden is None:
        hidden = getattr(raw, "_hidden_params", None)
    return hidden if isinstance(hidden, dict) else {}


def response_info(raw: Any) -> ResponseInfo:
    """Who answered, from a stream's first chunk (litellm's hidden params and fields)."""
    hidden = _hidden_params(raw)
    model = read_field(raw, "model")
    response_id = read_field(raw, "id")
    deployment = hidden.get("model_id")
    api_base = hidden.get("api_base")
    provider = hidden.get("custom_llm_provider")
    return ResponseInfo(
        id=response_id if isinstance(response_id, str) and response_id else None,
        model=model if isinstance(model, str) and model else None,
        provider=provider if isinstance(provider, str) and provider else None,
        deployment_id=deployment if isinstance(deployment, str) and deployment else None,
        api_base=api_base if isinstance(api_base, str) and api_base else None,
    )
