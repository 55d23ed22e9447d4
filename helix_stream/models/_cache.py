"""Automatic prompt-cache breakpoints (``prompt_cache="auto"``, the default).

Anthropic and Bedrock cache a request prefix only up to a block marked with a cache marker
(``cache_control``; litellm turns it into Bedrock's ``cachePoint``), at most 4 per request.
OpenAI, Gemini and the rest cache by themselves and get no markers. With ``"auto"`` each
request to a family that needs markers gets them, in this order, within the limit:

1. the **last message** — the end of this request's prefix, which the next request reads back
   (it moves forward call by call);
2. the **end of the previous request**: the message just before the last assistant message,
   so that the cache entry the previous call wrote is found even when one step added many
   blocks (the provider looks back only a limited number of blocks from a marker);
3. the **system prompt** (the last of the leading system messages);
4. the **tools** (the last tool definition).

Markers a caller put on messages or tools count against the limit and are left as they are.
A marker never changes anything else: a request with its markers removed is byte for byte the
request without them, so every request stays a prefix of the next (README, "Prompt caching").

``prompt_cache=False`` sends no markers. The value travels as ``stream_text(prompt_cache=...)``,
``generate_text(...)``, ``Agent(prompt_cache=...)``, and a ``prepare_step`` override
``{"prompt_cache": ...}`` wins for its step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ..errors import InvalidRequestError
from ..middleware import ModelMiddleware
from ._family import Family, params_family, traits

__all__ = [
    "CACHE_MARKER",
    "PromptCache",
    "PromptCacheMiddleware",
    "apply_cache_breakpoints",
    "check_prompt_cache",
    "count_cache_markers",
    "with_cache_breakpoints",
]

PromptCache = Literal["auto"] | bool
CACHE_MARKER: dict[str, str] = {"type": "ephemeral"}


def check_prompt_cache(value: object) -> bool:
    """Whether ``value`` turns markers on (``"auto"`` or ``True``) or off (``False``).

    Raises:
        InvalidRequestError: any other value.
    """
    if value == "auto" or value is True:
        return True
    if value is False:
        return False
    raise InvalidRequestError(f'prompt_cache must be "auto" or False, not {value!r}.')


def _has_marker(obj: object) -> bool:
    return isinstance(obj, Mapping) and obj.get("cache_control") is not None


def _message_markers(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    return int(_has_marker(message)) + sum(_has_marker(p) for p in parts)


def count_cache_markers(params: Mapping[str, Any]) -> int:
    """How many cache markers the messages and tools of ``params`` already carry."""
    messages = params.get("messages") or []
    tools = params.get("tools") or []
    return sum(_message_markers(m) for m in messages) + sum(_has_marker(t) for t in tools)


def _marked(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """``message`` with a marker on its last block, or ``None`` when it has no block to mark
    (or already carries a marker)."""
    if _message_markers(message):
        return None
    content = message.get("content")
    if isinstance(content, str) and content:
        if message.get("role") == "system":
            # litellm reads the leading system prompt's marker from a text part.
            part = {"type": "text", "text": content, "cache_control": dict(CACHE_MARKER)}
            return {**message, "content": [part]}
        # On a string, litellm puts a message-level marker on the block the string becomes.
        return {**message, "cache_control": dict(CACHE_MARKER)}
    if isinstance(content, list) and content and isinstance(content[-1], Mapping):
        if message.get("role") == "tool":
            # A tool result is one block on the wire (its parts are inside it).
            return {**message, "cache_control": dict(CACHE_MARKER)}
        last = {**content[-1], "cache_control": dict(CACHE_MARKER)}
        return {**message, "content": [*content[:-1], last]}
    return None


def _targets(messages: list[dict[str, Any]]) -> list[int]:
    """Message indexes to mark, best first: last message, previous request's end, system."""
    found: list[int] = []
    if messages:
        found.append(len(messages) - 1)
    last_assistant = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )
    if last_assistant and messages[last_assistant - 1].get("role") in ("user", "tool"):
        found.append(last_assistant - 1)
    leading_system = 0
    while leading_system < len(messages) and messages[leading_system].get("role") == "system":
        leading_system += 1
    if leading_system:
        found.append(leading_system - 1)
    return list(dict.fromkeys(found))


def apply_cache_breakpoints(
    params: Mapping[str, Any], family: Family, mode: PromptCache = "auto"
) -> dict[str, Any]:
    """``params`` (``litellm.acompletion`` keyword arguments) with cache markers added where
    ``family`` needs them (module docstring). Pure: ``params`` and its messages are not
    changed; changed messages and tools are copies.

    Args:
        params: The request, OpenAI format (``messages``, ``tools``, ...).
        family: The provider family the request goes to (:func:`provider_family`).
        mode: ``"auto"`` (or ``True``) to add markers, ``False`` for none.

    Raises:
        InvalidRequestError: ``mode`` is neither ``"auto"``, ``True`` nor ``False``.
    """
    out = dict(params)
    limit = traits(family).max_breakpoints
    if not check_prompt_cache(mode) or limit == 0:
        return out
    budget = limit - count_cache_markers(params)
    messages = list(params.get("messages") or [])
    for index in _targets(messages):
        if budget <= 0:
            break
        marked = _marked(messages[index])
        if marked is not None:
            messages[index] = marked
            budget -= 1
    if messages:
        out["messages"] = messages
    tools = params.get("tools")
    if budget > 0 and tools and isinstance(tools[-1], Mapping) and not _has_marker(tools[-1]):
        out["tools"] = [*tools[:-1], {**tools[-1], "cache_control": dict(CACHE_MARKER)}]
    return out


async def with_cache_breakpoints(params: Mapping[str, Any], mode: PromptCache) -> dict[str, Any]:
    """:func:`apply_cache_breakpoints` for the family of ``params["model"]`` (what the loop
    calls on the final request, after model middleware)."""
    if not check_prompt_cache(mode):
        return dict(params)
    family = await params_family(str(params["model"]), params)
    return apply_cache_breakpoints(params, family, mode)


class PromptCacheMiddleware(ModelMiddleware):
    """Model middleware that adds cache breakpoints to every call it wraps.

    Put it last in a middleware list (innermost), so that it sees the final messages and
    model. A ``prompt_cache`` key in the call's params (``"auto"`` or ``False``) wins over the
    middleware's own mode for that call and is not passed on to litellm.

    Example::

        acompletion = hs.wrap_acompletion(litellm.acompletion, [PromptCacheMiddleware()])
    """

    def __init__(self, mode: PromptCache = "auto") -> None:
        check_prompt_cache(mode)
        self.mode: PromptCache = mode

    async def transform_params(self, params: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        params = dict(params)
        mode = params.pop("prompt_cache", self.mode)
        return await with_cache_breakpoints(params, mode)
