"""The size of litellm's HTTP connection pool: how many model streams run at once.

litellm sends every request through one cached client per provider whose aiohttp connector
caps connections at ``AIOHTTP_CONNECTOR_LIMIT`` in all (default 1,000) and
``AIOHTTP_CONNECTOR_LIMIT_PER_HOST`` per host (default 500). A chat server streams every
answer from one provider host, so with litellm's defaults its 501st concurrent chat waits, with
no error and no log line, until one of the first 500 ends. This module owns the rule that sizes
the pool for the server instead: both caps are set to ``max_connections``
(:data:`DEFAULT_MAX_CONNECTIONS` unless the app chose, README "Serving an agent to `useChat`").

The value is process-wide (litellm's clients are shared by every agent of the process) and
applies to the clients litellm creates after it is set: set it at startup, before the first
model call (``routes(max_connections=...)``, ``helix-stream serve --max-connections``). An
``AIOHTTP_CONNECTOR_LIMIT_PER_HOST`` in the environment wins over the default, never over a
value the app set. Setting it never imports litellm: :func:`apply_pool` runs once litellm is
loaded (``_litellm.litellm_module``).
"""

from __future__ import annotations

import logging
import os
from types import ModuleType

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "POOL_ENV",
    "apply_pool",
    "max_connections",
    "set_max_connections",
]

logger = logging.getLogger("helix_stream.models")

DEFAULT_MAX_CONNECTIONS = 4096
"""Connections to model providers at once, per host and in all: room for 1,000 streaming chats
with tool calls and sub-agents in flight (a cap, not a reservation: idle ones close)."""

POOL_ENV = "AIOHTTP_CONNECTOR_LIMIT_PER_HOST"
_chosen: int | None = None  # what the app set; None: the default (or the environment's)
_loaded: ModuleType | None = None  # litellm, once apply_pool has seen it


def max_connections() -> int:
    """The pool size in effect: the app's choice, else the environment's, else the default."""
    if _chosen is not None:
        return _chosen
    from_env = os.environ.get(POOL_ENV, "").strip()
    if from_env.isdigit() and int(from_env) > 0:
        return int(from_env)
    return DEFAULT_MAX_CONNECTIONS


def set_max_connections(value: int) -> None:
    """Size litellm's connection pool to ``value`` connections (per host and in all).

    Takes effect at once if litellm is loaded, else when it is; clients litellm made before
    keep their size, so call it at startup.

    Raises:
        ValueError: ``value`` is not a positive int.
    """
    global _chosen
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"max_connections must be a positive int, not {value!r}")
    _chosen = value
    if _loaded is not None:
        apply_pool(_loaded)


def apply_pool(litellm: ModuleType) -> None:
    """Give litellm's HTTP clients the pool size in effect (called once litellm is imported).

    litellm reads its limits from module globals of its HTTP handler when it builds a
    client's transport, so those are what is set (the aiohttp connector's ``limit`` and
    ``limit_per_host``, and the matching httpx limits of its fallback transport).
    """
    global _loaded
    _loaded = litellm
    size = max_connections()
    try:
        from litellm.llms.custom_httpx import http_handler
    except ImportError:  # pragma: no cover - a litellm without its HTTP handler module
        logger.warning("litellm has no http_handler module: its connection pool keeps its size")
        return
    setattr(http_handler, "AIOHTTP_CONNECTOR_LIMIT", size)  # noqa: B010 - litellm's Final
    setattr(http_handler, "AIOHTTP_CONNECTOR_LIMIT_PER_HOST", size)  # noqa: B010
    limits = getattr(http_handler, "_AIOHTTP_EQUIVALENT_LIMITS", None)
    if limits is not None:
        import httpx  # loaded with litellm

        equivalent = httpx.Limits(
            max_connections=size,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )
        setattr(http_handler, "_AIOHTTP_EQUIVALENT_LIMITS", equivalent)  # noqa: B010
