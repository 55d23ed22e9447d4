"""The front of every store's writes: :class:`StoreWrites`.

``write_turn`` and ``enqueue_context`` check their arguments here, the same way for every store
and before it is touched, then run the backend's one transaction (``_write_turn``,
``_enqueue``: read the state, plan, apply). ``set_status`` and ``update_session_meta`` are
:class:`~helix_stream.store.TurnWrite` forms, so no backend writes a status or a meta by hand.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from helix_stream._limits import check_session_id
from helix_stream.store._plan import CheckedWrite, ContextRequest, check_enqueue, check_turn_write
from helix_stream.store._records import JSON, SessionRecord, SessionStatus
from helix_stream.store._turns import TurnWrite, TurnWriteResult

__all__ = ["StoreWrites"]


class StoreWrites:
    """The write methods of the ``Store`` protocol that every store shares; a store implements
    ``_write_turn`` and ``_enqueue``."""

    async def write_turn(self, session_id: str, write: TurnWrite) -> TurnWriteResult:
        """Apply one turn boundary in one transaction (see ``TurnWrite``)."""
        check_session_id(session_id)
        return await self._write_turn(session_id, check_turn_write(write))

    async def enqueue_context(
        self,
        session_id: str,
        items: Sequence[JSON],
        *,
        source: str,
        origin: Mapping[str, Any],
        key: str | None = None,
        on_key_conflict: Literal["raise", "ignore"] = "raise",
    ) -> int:
        """Queue items for the next context pass (see ``Store.enqueue_context``); return how
        many were recorded."""
        check_session_id(session_id)
        request = check_enqueue(
            items, source=source, origin=origin, key=key, on_key_conflict=on_key_conflict
        )
        return await self._enqueue(session_id, request)

    async def set_status(
        self,
        session_id: str,
        status: SessionStatus,
        *,
        expect: Sequence[SessionStatus] | None = None,
    ) -> bool:
        """Set the status; with ``expect``, only if the current one is among them (a
        compare-and-set). Returns whether it was set."""
        result = await self.write_turn(session_id, TurnWrite(status=status, expect=expect))
        return result.applied

    async def update_session_meta(self, session_id: str, patch: Mapping[str, Any]) -> SessionRecord:
        """Merge ``patch`` into ``meta`` (``None`` removes a key); return the new record."""
        return (await self.write_turn(session_id, TurnWrite(meta=dict(patch)))).session

    async def _write_turn(self, session_id: str, write: CheckedWrite) -> TurnWriteResult:
        """The backend's transaction: read the state, ``plan_turn_write``, apply."""
        raise NotImplementedError

    async def _enqueue(self, session_id: str, request: ContextRequest) -> int:
        """The backend's transaction: read the state, ``plan_enqueue``, apply."""
        raise NotImplementedError
