"""The cache ledger's memory and its account of each model call.

A :class:`CacheBook` remembers, per session and per model (the litellm model string and its
``api_base``), the fingerprint of the previous request (``_cache_segments.py``) and the id of
the provider's answer to it. Each model call (:class:`CacheEntry`, made by
:meth:`CacheBook.entry` on the request that is really sent, markers and all) compares itself
with that previous request and becomes the call's :class:`~helix_stream.CacheLedger` once it
has answered (:meth:`CacheEntry.ledger`).

The book is per process and bounded (the least recently used sessions are forgotten first): a
session's first call in a process has nothing to compare with (``compared=False``). An executor's
sessions share one book per store (``session/_turn_env.py``); a run without a session has its
own book, so its steps compare with each other.

**Anthropic's miss reason.** Anthropic's API compares a request with an earlier one itself when
asked (its cache diagnostics, beta ``cache-diagnosis-2026-04-07``): the request body carries
``"diagnostics": {"previous_message_id": <the id of the previous answer, or null>}`` and the
header ``anthropic-beta`` names the beta; the answer's ``diagnostics.cache_miss_reason`` says
what changed (``type``) and how many input tokens followed the change
(``cache_missed_input_tokens``). It is asked for only where litellm sends the request to
Anthropic's API (provider ``anthropic``): never to Bedrock, Vertex AI, Azure or any other
provider, which would refuse an unknown parameter; and by default only at Anthropic's own
address (``PromptCache(diagnostics=True)`` asks at an ``api_base`` too). It is read where
helix reads the stream itself (``_direct_anthropic.py``); through litellm's stream wrapper
(model middleware, a callback) the field does not come through, and ``miss_reason`` is
``None``.

The book also tells ``ttl="auto"`` whether a session's turns come more than five minutes apart
(:meth:`CacheBook.slow`).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from .._cache_ledger import CacheBreakpoint, CacheLedger
from .._step_parts import Usage
from ._cache import CacheHints, PromptCacheOption
from ._cache_segments import Fingerprint, breakpoints, fingerprint, first_divergence

__all__ = [
    "DIAGNOSTICS_BETA",
    "SLOW_GAP",
    "CacheBook",
    "CacheEntry",
    "CacheScope",
    "asks_diagnostics",
]

DIAGNOSTICS_BETA = "cache-diagnosis-2026-04-07"
SLOW_GAP = 300.0  # seconds: Anthropic's default cache lifetime

_Key = tuple[str | None, str, str]  # (session, model, api_base)


@dataclass(frozen=True, slots=True)
class _Last:
    """What the book remembers of a session's previous request to one model: its
    fingerprint, the provider's id of its answer, and the id it was itself compared with (for
    a request that got no answer, a failed attempt: its retry compares with that one)."""

    fingerprint: Fingerprint
    answer_id: str | None = None
    compared_with: str | None = None

    @property
    def comparable_id(self) -> str | None:
        return self.answer_id or self.compared_with


@lru_cache(maxsize=256)
def _provider(model: str, custom: str | None, api_base: str | None) -> str | None:
    from ._litellm import llm_provider

    found = llm_provider(model, custom_llm_provider=custom, api_base=api_base)
    return found.provider if found is not None else None


def asks_diagnostics(params: Mapping[str, Any], wanted: bool | None) -> bool:
    """Whether to ask for Anthropic's cache diagnostics (``PromptCache.diagnostics``): never
    with ``False``; only where litellm sends the request to Anthropic's API (its
    ``anthropic`` provider), the one that takes the parameter; with ``None``, only at
    Anthropic's own address (no ``api_base``)."""
    if wanted is False:
        return False
    api_base = params.get("api_base") or params.get("base_url")
    if wanted is None and api_base:
        return False
    custom = params.get("custom_llm_provider")
    return _provider(str(params["model"]), custom, api_base) == "anthropic"


def _with_diagnostics(params: dict[str, Any], previous: str | None) -> dict[str, Any]:
    if "diagnostics" in params:  # the caller asked for their own comparison
        return params
    headers = dict(params.get("extra_headers") or {})
    betas = [b.strip() for b in str(headers.get("anthropic-beta") or "").split(",") if b.strip()]
    if DIAGNOSTICS_BETA not in betas:
        headers["anthropic-beta"] = ",".join([*betas, DIAGNOSTICS_BETA])
    return {**params, "diagnostics": {"previous_message_id": previous}, "extra_headers": headers}


class CacheBook:
    """Per session and model, the previous request's fingerprint and answer id (see the
    module docstring). ``limit``: how many (session, model) pairs it keeps."""

    def __init__(self, limit: int = 2048) -> None:
        self._limit = limit
        self._last: OrderedDict[_Key, _Last] = OrderedDict()
        self._sent: OrderedDict[str | None, float] = OrderedDict()  # last request, per session
        self._slow: set[str | None] = set()
        # Sessions of one store may run in several threads (the sync wrappers' loops).
        self._lock = threading.Lock()

    def slow(self, session_id: str | None, *, first_of_turn: bool) -> bool:
        """Whether ``session_id``'s turns have come more than five minutes apart: a turn's
        first request that comes that long after the session's previous one makes it so (for
        the rest of the process)."""
        with self._lock:
            if first_of_turn and session_id is not None:
                last = self._sent.get(session_id)
                if last is not None and time.monotonic() - last > SLOW_GAP:
                    self._slow.add(session_id)
            return session_id in self._slow

    def entry(
        self, session_id: str | None, params: Mapping[str, Any], *, diagnostics: bool | None
    ) -> tuple[CacheEntry, dict[str, Any]]:
        """The account of the request ``params`` (final: after middleware and markers), and
        the request to send: with Anthropic's diagnostics asked for where
        :func:`asks_diagnostics` says so. The book now remembers it as the previous one."""
        api_base = params.get("api_base") or params.get("base_url") or ""
        key: _Key = (session_id, str(params["model"]), str(api_base))
        now = fingerprint(params)  # outside the lock: the one pass over the request
        with self._lock:
            last = self._last.get(key)
            previous_id = last.comparable_id if last is not None else None
            self._remember(key, _Last(fingerprint=now, compared_with=previous_id))
            self._sent_now(session_id)
        entry = CacheEntry(
            book=self,
            key=key,
            compared=last is not None,
            diverged_at=first_divergence(last.fingerprint, now) if last is not None else None,
            breakpoints=breakpoints(params),
        )
        out = dict(params)
        if asks_diagnostics(params, diagnostics):
            out = _with_diagnostics(out, previous_id)
        return entry, out

    def _remember(self, key: _Key, last: _Last) -> None:
        self._last[key] = last
        self._last.move_to_end(key)
        if len(self._last) > self._limit:
            self._last.popitem(last=False)

    def _sent_now(self, session_id: str | None) -> None:
        self._sent[session_id] = time.monotonic()
        self._sent.move_to_end(session_id)
        if len(self._sent) > self._limit:
            gone, _ = self._sent.popitem(last=False)
            self._slow.discard(gone)

    def answered(self, key: _Key, answer_id: str | None) -> None:
        """The provider's id of the answer to the request remembered under ``key``."""
        with self._lock:
            last = self._last.get(key)
            if last is not None and answer_id is not None:
                self._last[key] = replace(last, answer_id=answer_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheEntry:
    """One model call's comparison with the previous request, waiting for the answer."""

    book: CacheBook
    key: _Key
    compared: bool
    diverged_at: str | None
    breakpoints: tuple[CacheBreakpoint, ...]

    def ledger(self, usage: Usage, stream: Any) -> CacheLedger:
        """The call's :class:`~helix_stream.CacheLedger`: its usage's cache counts and what the
        provider's stream said (``stream``: the provider stream the call read; a direct
        Anthropic stream carries the answer's id and its diagnostics)."""
        answer_id = getattr(stream, "message_id", None)
        self.book.answered(self.key, answer_id if isinstance(answer_id, str) else None)
        reason, missed = _miss(getattr(stream, "cache_diagnostics", None))
        return CacheLedger(
            read_tokens=usage.cached_input_tokens,
            write_tokens=usage.cache_creation_input_tokens,
            compared=self.compared,
            diverged_at=self.diverged_at,
            miss_reason=reason,
            missed_tokens=missed,
            breakpoints=self.breakpoints,
        )


def _miss(diagnostics: Any) -> tuple[str | None, int | None]:
    """Anthropic's ``diagnostics`` object as (reason type, missed input tokens)."""
    if not isinstance(diagnostics, Mapping):
        return None, None
    miss = diagnostics.get("cache_miss_reason")
    if not isinstance(miss, Mapping):
        return None, None
    reason = miss.get("type")
    missed = miss.get("cache_missed_input_tokens")
    return (
        reason if isinstance(reason, str) else None,
        missed if isinstance(missed, int) and not isinstance(missed, bool) else None,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheScope:
    """One model call's prompt caching: its ``prompt_cache`` value (``mode``), the ledger's
    book and session, and what ``ttl="auto"`` decides with (``hints``)."""

    book: CacheBook
    session_id: str | None = None
    mode: PromptCacheOption = "auto"
    hints: CacheHints = field(default_factory=CacheHints)
