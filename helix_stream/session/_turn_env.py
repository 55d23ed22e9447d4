"""The turn environment an opened turn hands the loop (:func:`turn_env`).

Everything the loop needs of the session, made once per turn (``loop/_env.py`` says what
each part is for): the turn's log (:class:`~._turn_log.TurnLog`: commit, persist, end), the
factory of each tool call's context — the session, a per-call context queue
(:class:`ToolQueue`), the agent's sandbox and skills, the executor's token settings and the
turn's :class:`~._parking.Parking` — the session's start events, and the plan for the calls a
paused turn waited for (``_pending.plan_resume``), which the loop's resume step carries out.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence

from .._tool_context import ItemLike
from ..context import TOOL_SOURCE, validate_items
from ..loop._env import CallContexts, TurnEnv
from ..models._cache_book import CacheBook
from ..state import bind_scope
from ..steps import ToolCall
from ..store import Store
from ..tools import Tool
from ._compaction import compactor
from ._open import Opened
from ._pending import plan_resume
from ._side_effects import session_calls, settle_unknown, waiting_data
from ._turn_log import TurnLog

__all__ = ["ToolQueue", "turn_env"]

logger = logging.getLogger("helix_stream.context")

# One cache-ledger book per store: every executor on a store shares its sessions' previous
# requests (two stores with a session of the same id never mix). Gone with its store.
_BOOKS: weakref.WeakKeyDictionary[Store, CacheBook] = weakref.WeakKeyDictionary()


def cache_book(store: Store) -> CacheBook | None:
    """The cache-ledger book of ``store``'s sessions (``None`` for a store that cannot be
    weakly referenced: each run then keeps its own)."""
    try:
        book = _BOOKS.get(store)
        if book is None:
            book = _BOOKS[store] = CacheBook()
    except TypeError:
        return None
    return book


def turn_env(opened: Opened) -> TurnEnv:
    """The environment ``opened``'s run gets (see the module docstring)."""
    request, view, scope = opened.request, opened.view, opened.scope
    authorization, parking = request.authorization, opened.parking
    plan = None
    if view.waiting:
        plan = plan_resume(
            view.waiting,
            view.answers,
            tools=request.setup.tools,
            inactive=view.inactive_now,
            deadline=view.deadline,
            moved_on=request.message is not None,
            max_bytes=request.setup.options.max_tool_result_bytes,
        )
        plan = settle_unknown(plan, {row.tool_call_id for row in opened.unsettled})
    store, session_id = request.store, request.session_id
    calls = CallContexts(
        session=scope.info,
        queue=lambda call, tool: ToolQueue(store, session_id, call, tool),
        sandbox=opened.sandbox,
        auth=authorization.settings if authorization is not None else None,
        park=parking.park if authorization is not None else None,
        scope=lambda: bind_scope(scope),
        ledger=session_calls(store, session_id, request.setup.tools),
    )

    async def begin() -> None:
        if opened.created:
            await opened.events.emit("session.started", {"agent": request.agent.name})
        # A run that resumes a paused turn carries the same turn on: it started already.
        if not (view.waiting and opened.meta.turns == view.meta.turns):
            await opened.events.emit("turn.started", {"turn": scope.info.turn.sequence})
        if opened.unsettled:  # calls whose outcome is unknown: the app may settle them
            await opened.events.emit("session.waiting", waiting_data(opened.unsettled))

    return TurnEnv(
        log=TurnLog(opened, plan),
        calls=calls,
        begin=begin,
        resume=plan.resume if plan is not None else None,
        budget=opened.budget,
        cache_book=cache_book(store),
        compactor=compactor(opened),
    )


class ToolQueue:
    """Where one tool call queues context (``ctx.add_context``): its items always carry
    source ``tool``; a re-run of the same call site (same call id, same position) records
    nothing: first wins, never refused."""

    def __init__(self, store: Store, session_id: str, call: ToolCall, tool: Tool) -> None:
        self._store = store
        self._session_id = session_id
        self._call = call
        self._tool = tool
        self._position = 0  # which add_context of the call this is

    async def add(self, items: Sequence[ItemLike]) -> int:
        position, self._position = self._position, self._position + 1
        clean = validate_items(items, forced_source=TOOL_SOURCE)
        for item in clean:
            if item.get("enable"):
                logger.warning(
                    "core.context.enable_ignored: tool %r may switch tools off, never on; "
                    "its enable of %s has no effect",
                    self._tool.name,
                    item["enable"],
                    extra={"event": "core.context.enable_ignored", "session_id": self._session_id},
                )
        call = self._call
        origin = {"type": "tool", "tool_call_id": call.id, "tool_name": self._tool.name}
        return await self._store.enqueue_context(
            self._session_id,
            clean,
            source=TOOL_SOURCE,
            origin={**origin, "position": position},
            key=f"call:{call.id}:{position}",
            on_key_conflict="ignore",
        )
