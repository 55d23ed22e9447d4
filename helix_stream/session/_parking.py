"""The calls of one turn parked on a sign-in (:class:`Parking`): kept by the turn's tool
context factory (``_turn_env.py``), read by its log when the turn pauses (``_turn_log.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..auth._flow import ParkForSignIn
from ..chunks import ToolAuthorizationRequest
from ._authorization import waiting_answer
from ._meta import TurnMeta

if TYPE_CHECKING:
    from ._authorization import TurnAuthorization

__all__ = ["Parking"]


class Parking:
    """The calls of one turn parked on a sign-in, in the order they parked."""

    def __init__(self, authorization: TurnAuthorization | None, session_id: str) -> None:
        self._authorization = authorization
        self._session_id = session_id
        self.parked: dict[str, tuple[str, str]] = {}  # call id -> (strategy, url)

    async def park(self, park: ParkForSignIn) -> ToolAuthorizationRequest:
        """Keep the sign-in ``park`` waits for; the chunk that shows its URL."""
        assert self._authorization is not None  # only a turn with one parks
        sign_in = await self._authorization.begin(park, self._session_id)
        name = park.strategy.name
        self.parked[park.tool_call_id] = (name, sign_in.url)
        return ToolAuthorizationRequest(
            tool_call_id=park.tool_call_id, strategy=name, url=sign_in.url
        )

    def answers(self) -> dict[str, Any]:
        """The meta patch that records each parked call as waiting for its sign-in."""
        patch: dict[str, Any] = {}
        for call_id, (strategy, url) in self.parked.items():
            patch.update(TurnMeta.answer(call_id, waiting_answer(strategy, url)))
        return patch

    def waiting_data(self, pending: list[str]) -> dict[str, Any]:
        """``session.waiting``'s data: what the calls wait for; for a sign-in, the strategy
        and the URL (of the first parked call; ``authorizations`` lists each)."""
        parked = [
            {"tool_call_id": call_id, "strategy": strategy, "url": url}
            for call_id, (strategy, url) in self.parked.items()
        ]
        if not parked:
            return {"pending": pending}
        first = parked[0]
        return {
            "pending": pending,
            "wait": "authorization",
            "strategy": first["strategy"],
            "url": first["url"],
            "authorizations": parked,
        }
