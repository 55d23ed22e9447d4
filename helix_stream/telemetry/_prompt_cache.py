"""The cache ledger on the step span: ``helix.prompt_cache.*`` attributes.

A step's :class:`~helix_stream.CacheLedger` (``StepResult.cache``) as span attributes, so that
every miss is explained where the call is traced:

* ``helix.prompt_cache.read_tokens``, ``helix.prompt_cache.write_tokens``: as the provider
  reported them;
* ``helix.prompt_cache.compared``: whether a previous request of the session was compared;
* ``helix.prompt_cache.diverged_at``: the first segment that differs from it (``"tools"``,
  ``"system"``, ``"message N"``), only when one does;
* ``helix.prompt_cache.miss_reason``, ``helix.prompt_cache.missed_tokens``: the provider's own
  reason and estimate, when it gave them;
* ``helix.prompt_cache.breakpoints``: each breakpoint as ``"<segment>:<ttl>"`` in cache order
  (``["tools:1h", "system:1h", "message 6:5m"]``);
* ``helix.prompt_cache.cost_usd``, ``helix.prompt_cache.cost_without_cache_usd``: when priced.

None of it is content: segment names, counts and the provider's reason type only.
"""

from __future__ import annotations

from typing import Any

from ._filters import AttributeValue

__all__ = ["prompt_cache_attributes"]

_PREFIX = "helix.prompt_cache."


def prompt_cache_attributes(ledger: Any) -> dict[str, AttributeValue]:
    """``ledger`` (a ``CacheLedger``, or ``None``) as ``helix.prompt_cache.*`` attributes."""
    if ledger is None:
        return {}
    attrs: dict[str, AttributeValue] = {
        _PREFIX + "read_tokens": int(ledger.read_tokens),
        _PREFIX + "write_tokens": int(ledger.write_tokens),
        _PREFIX + "compared": bool(ledger.compared),
    }
    optional = {
        "diverged_at": ledger.diverged_at,
        "miss_reason": ledger.miss_reason,
        "missed_tokens": ledger.missed_tokens,
        "cost_usd": ledger.cost_usd,
        "cost_without_cache_usd": ledger.cost_without_cache_usd,
    }
    attrs.update({_PREFIX + k: v for k, v in optional.items() if v is not None})
    if ledger.breakpoints:
        attrs[_PREFIX + "breakpoints"] = [f"{p.segment}:{p.ttl}" for p in ledger.breakpoints]
    return attrs
