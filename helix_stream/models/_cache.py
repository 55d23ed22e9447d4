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

**Lifetimes** (:class:`PromptCache` ``ttl``). A marker is written with Anthropic's default
five-minute lifetime (``{"type": "ephemeral"}``, as ``"auto"`` always sent) or with one hour
(``{"type": "ephemeral", "ttl": "1h"}``); only the ``anthropic`` family gets ``"1h"`` (Bedrock's
``cachePoint`` keeps its default). ``ttl="auto"`` decides per request, from what the loop knows
when the request is written (:class:`CacheHints`):

* the **last message** gets one hour when the request offers a tool that can park the turn (one
  that needs an approval, a client tool, or one with ``auth=``, which may wait for a sign-in):
  a lifetime is chosen when the entry is written, and this is the last request written before
  such a wait, the one the turn's resumption reads back;
* the **system prompt and the tools** get one hour once the session's turns have come more than
  five minutes apart (its first request of a turn came over five minutes after the session's
  previous request; the book of that is in ``_cache_book.py``, per process);
* everything else five minutes. Anthropic requires longer-lived markers to come before
  shorter-lived ones in cache order (tools, system, messages): a marker before a one-hour one
  is one hour too. When the caller put markers of their own, ``"auto"`` adds only five-minute
  ones (their order is the caller's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..errors import InvalidRequestError
from ..middleware import ModelMiddleware
from ._family import Family, params_family, traits

__all__ = [
    "CACHE_MARKER",
    "CacheHints",
    "PromptCache",
    "PromptCacheMiddleware",
    "PromptCacheOption",
    "apply_cache_breakpoints",
    "cache_settings",
    "check_prompt_cache",
    "count_cache_markers",
    "with_cache_breakpoints",
]

CACHE_MARKER: dict[str, str] = {"type": "ephemeral"}
_TTLS = ("5m", "1h", "auto")


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptCache:
    """Prompt caching with a chosen cache lifetime: ``prompt_cache=hs.PromptCache(ttl=...)``.

    ``prompt_cache="auto"`` (the default) is ``PromptCache(ttl="5m")``: the markers as they
    always were. A one-hour entry costs more to write (Anthropic: 2x the input price against
    1.25x) and is worth it when the next read comes after more than five minutes.

    Attributes:
        ttl: ``"5m"``: every breakpoint the provider's default five minutes; ``"1h"``: every
            breakpoint one hour; ``"auto"``: one hour where a wait is likely (the request that
            offers a tool which can park the turn; the system prompt and tools of a session
            whose turns come more than five minutes apart), five minutes elsewhere. Only the
            ``anthropic`` provider family takes ``"1h"``; the lifetime each breakpoint got is
            in ``StepResult.cache.breakpoints``.
        diagnostics: Ask Anthropic's API (``anthropic/...`` models) for its cache diagnostics,
            which give ``StepResult.cache.miss_reason``: ``None`` (the default) asks Anthropic's
            own address only (no ``api_base``: a gateway in between may not take the beta
            parameter); ``True`` asks an ``anthropic/...`` model at any ``api_base``;
            ``False`` never asks. No other provider is ever asked.

    Raises:
        InvalidRequestError: ``ttl`` is not one of ``"5m"``, ``"1h"``, ``"auto"``.

    Example::

        agent = hs.Agent(
            name="support",
            model="anthropic/claude-sonnet-4-5",
            prompt_cache=hs.PromptCache(ttl="auto"),
        )
    """

    ttl: Literal["5m", "1h", "auto"] = "auto"
    diagnostics: bool | None = None

    def __post_init__(self) -> None:
        if self.ttl not in _TTLS:
            raise InvalidRequestError(
                f'PromptCache(ttl=...) takes "5m", "1h" or "auto", not {self.ttl!r}.'
            )
        if self.diagnostics not in (None, True, False):
            raise InvalidRequestError("PromptCache(diagnostics=...) takes None, True or False.")


PromptCacheOption: TypeAlias = Literal["auto"] | bool | PromptCache
"""What ``prompt_cache=`` takes: ``"auto"`` (or ``True``), ``False``, or a :class:`PromptCache`."""

_DEFAULT = PromptCache(ttl="5m")


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheHints:
    """What the loop knows, when it writes a request, that ``ttl="auto"`` decides with.

    Attributes:
        can_park: The request offers a tool that can park the turn (approval, client tool,
            sign-in): the last message's breakpoint is the one read back after the wait.
        slow: The session's turns have come more than five minutes apart.
    """

    can_park: bool = False
    slow: bool = False


def cache_settings(value: object) -> PromptCache | None:
    """``prompt_cache=``'s value as a :class:`PromptCache`, or ``None`` for ``False``.

    Raises:
        InvalidRequestError: any value but ``"auto"``, ``True``, ``False`` or a PromptCache.
    """
    if isinstance(value, PromptCache):
        return value
    if value == "auto" or value is True:
        return _DEFAULT
    if value is False:
        return None
    raise InvalidRequestError(
        f'prompt_cache must be "auto", False or hs.PromptCache(ttl=...), not {value!r}.'
    )


def check_prompt_cache(value: object) -> bool:
    """Whether ``value`` turns markers on (``"auto"``, ``True``, a :class:`PromptCache`) or
    off (``False``).

    Raises:
        InvalidRequestError: any other value.
    """
    return cache_settings(value) is not None


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


def _marked(message: Mapping[str, Any], marker: Mapping[str, str]) -> dict[str, Any] | None:
    """``message`` with ``marker`` on its last block, or ``None`` when it has no block to mark
    (or already carries a marker)."""
    if _message_markers(message):
        return None
    content = message.get("content")
    if isinstance(content, str) and content:
        if message.get("role") == "system":
            # litellm reads the leading system prompt's marker from a text part.
            part = {"type": "text", "text": content, "cache_control": dict(marker)}
            return {**message, "content": [part]}
        # On a string, litellm puts a message-level marker on the block the string becomes.
        return {**message, "cache_control": dict(marker)}
    if isinstance(content, list) and content and isinstance(content[-1], Mapping):
        if message.get("role") == "tool":
            # A tool result is one block on the wire (its parts are inside it).
            return {**message, "cache_control": dict(marker)}
        last = {**content[-1], "cache_control": dict(marker)}
        return {**message, "content": [*content[:-1], last]}
    return None


_Target = tuple[Literal["last", "previous", "system", "tools"], int]


def _targets(messages: list[dict[str, Any]]) -> list[_Target]:
    """Messages to mark, best first: last message, previous request's end, system."""
    found: dict[int, _Target] = {}
    if messages:
        found.setdefault(len(messages) - 1, ("last", len(messages) - 1))
    last_assistant = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "assistant"),
        None,
    )
    if last_assistant and messages[last_assistant - 1].get("role") in ("user", "tool"):
        found.setdefault(last_assistant - 1, ("previous", last_assistant - 1))
    leading_system = 0
    while leading_system < len(messages) and messages[leading_system].get("role") == "system":
        leading_system += 1
    if leading_system:
        found.setdefault(leading_system - 1, ("system", leading_system - 1))
    return list(found.values())


def _lifetimes(
    chosen: list[_Target], settings: PromptCache, family: Family, hints: CacheHints, *, own: bool
) -> list[bool]:
    """For each chosen breakpoint, whether it gets the one-hour lifetime (module docstring):
    in cache order (tools first, then messages), a marker before a one-hour one is one hour."""
    if family != "anthropic" or settings.ttl == "5m" or (settings.ttl == "auto" and own):
        return [False] * len(chosen)
    if settings.ttl == "1h":
        return [True] * len(chosen)
    wanted = {"last": hints.can_park, "system": hints.slow, "tools": hints.slow}
    order = sorted(range(len(chosen)), key=lambda i: chosen[i][1])  # tools are -1: first
    long = [False] * len(chosen)
    later = False
    for i in reversed(order):
        later = later or wanted.get(chosen[i][0], False)
        long[i] = later
    return long


def apply_cache_breakpoints(
    params: Mapping[str, Any],
    family: Family,
    mode: PromptCacheOption = "auto",
    hints: CacheHints | None = None,
) -> dict[str, Any]:
    """``params`` (``litellm.acompletion`` keyword arguments) with cache markers added where
    ``family`` needs them, each with its lifetime (module docstring). Pure: ``params`` and its
    messages are not changed; changed messages and tools are copies.

    Args:
        params: The request, OpenAI format (``messages``, ``tools``, ...).
        family: The provider family the request goes to (:func:`provider_family`).
        mode: ``"auto"`` (or ``True``) or a :class:`PromptCache` to add markers, ``False`` for
            none.
        hints: What ``ttl="auto"`` decides with.

    Raises:
        InvalidRequestError: ``mode`` is not a ``prompt_cache`` value.
    """
    out = dict(params)
    settings = cache_settings(mode)
    limit = traits(family).max_breakpoints
    if settings is None or limit == 0:
        return out
    own = count_cache_markers(params)
    budget = limit - own
    messages = list(params.get("messages") or [])
    chosen: list[_Target] = []
    for target in _targets(messages):
        if len(chosen) >= budget:
            break
        if _marked(messages[target[1]], CACHE_MARKER) is not None:
            chosen.append(target)
    tools = list(params.get("tools") or ())
    markable = tools and isinstance(tools[-1], Mapping) and not _has_marker(tools[-1])
    if len(chosen) < budget and markable:
        chosen.append(("tools", -1))
    long = _lifetimes(chosen, settings, family, hints or CacheHints(), own=own > 0)
    for (kind, index), one_hour in zip(chosen, long, strict=True):
        marker = {**CACHE_MARKER, "ttl": "1h"} if one_hour else CACHE_MARKER
        if kind == "tools":
            out["tools"] = [*tools[:-1], {**tools[-1], "cache_control": dict(marker)}]
        else:
            messages[index] = _marked(messages[index], marker) or messages[index]
    if messages:
        out["messages"] = messages
    return out


async def with_cache_breakpoints(
    params: Mapping[str, Any], mode: PromptCacheOption, hints: CacheHints | None = None
) -> dict[str, Any]:
    """:func:`apply_cache_breakpoints` for the family of ``params["model"]`` (what the loop
    calls on the final request, after model middleware)."""
    if not check_prompt_cache(mode):
        return dict(params)
    family = await params_family(str(params["model"]), params)
    return apply_cache_breakpoints(params, family, mode, hints)


class PromptCacheMiddleware(ModelMiddleware):
    """Model middleware that adds cache breakpoints to every call it wraps.

    Put it last in a middleware list (innermost), so that it sees the final messages and
    model. A ``prompt_cache`` key in the call's params (``"auto"`` or ``False``) wins over the
    middleware's own mode for that call and is not passed on to litellm.

    Example::

        acompletion = hs.wrap_acompletion(litellm.acompletion, [PromptCacheMiddleware()])
    """

    def __init__(self, mode: PromptCacheOption = "auto") -> None:
        check_prompt_cache(mode)
        self.mode: PromptCacheOption = mode

    async def transform_params(self, params: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        params = dict(params)
        mode = params.pop("prompt_cache", self.mode)
        return await with_cache_breakpoints(params, mode)
