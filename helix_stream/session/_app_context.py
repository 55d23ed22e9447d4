"""``Executor.add_context`` and ``Executor.add_context_for``: context items from the app.

The items are checked (``validate_items``) and queued for the session's next model call, once
per ``key``, whether the session is idle, running or paused; the store's context queue does
the rest. With an agent, a tools item naming a tool it does not have is a warning, decided
before anything is written.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from .._limits import check_key, check_session_id
from ..context import APP_SOURCE, ContextAdded, ContextItemLike, unknown_tools, validate_items

if TYPE_CHECKING:
    from ..agent import Agent
    from ..store import Store

__all__ = ["SessionContext"]


class SessionContext:
    """The executor's ``add_context`` and ``add_context_for``."""

    store: Store

    async def add_context(
        self, session_id: str, items: Sequence[ContextItemLike], key: str | None = None
    ) -> int:
        """Queue context items for a session's next model call; return how many were recorded.

        Works whether the session is idle, running or paused. With a ``key`` (one request), a
        retry with the same items records nothing (0); the same key with other items is
        refused whole. Without a key every call records. Items get ``source="app"`` unless
        they name their own; ``"hook"`` is reserved for the step_context hook.
        :meth:`add_context_for` does the same and also checks the items against an agent.

        Raises:
            ContextValidationError: an item is invalid (nothing was queued).
            SessionNotFoundError: no such session.
            ContextKeyConflictError: ``key`` was used before with other items (nothing written).
        """
        return (await self._add_context(session_id, items, key, tools=None)).recorded

    async def add_context_for(
        self,
        agent: Agent,
        session_id: str,
        items: Sequence[ContextItemLike],
        key: str | None = None,
    ) -> ContextAdded:
        """:meth:`add_context` for a session of ``agent``, with warnings about what the agent
        cannot act on: a tools item naming a tool the agent does not have is recorded all the
        same (it switches nothing now; an MCP server's tools or a later version of the agent
        may bring the name), with ``"unknown tool 'x'"`` in ``warnings``. The warnings are
        decided before anything is written.

        Raises:
            ContextValidationError, SessionNotFoundError, ContextKeyConflictError: as
                :meth:`add_context` (nothing written).
        """
        return await self._add_context(session_id, items, key, tools=agent.tool_map)

    async def _add_context(
        self,
        session_id: str,
        items: Sequence[ContextItemLike],
        key: str | None,
        *,
        tools: Collection[str] | None,
    ) -> ContextAdded:
        check_session_id(session_id)
        check_key(key)
        clean = validate_items(items, default_source=APP_SOURCE)
        warnings = unknown_tools(clean, tools) if tools is not None else ()
        recorded = await self.store.enqueue_context(
            session_id,
            clean,
            source=APP_SOURCE,
            origin={"type": APP_SOURCE},
            key=key,
            on_key_conflict="raise",
        )
        return ContextAdded(recorded=recorded, warnings=warnings)
