"""The engine's own bookkeeping on a session, typed, kept apart from the app's ``meta``.

A store keeps one JSON ``meta`` object per session. The app's data lives there under its own
keys; the engine's lives under keys that start with ``helix.`` (reserved, like
``define_state`` names):

* ``helix.turn``: the turn counter, where the current turn's model calls start in the log
  (a retry of a turn that failed on its first step rewinds to it), and when the session
  paused;
* ``helix.initiator``, ``helix.parent``: who started the session, and for a sub-agent's
  session the call that started it;
* ``helix.answer.<call id>``: an answer to a paused call, one key per call, so that two
  answers arriving at once never overwrite each other (the meta merge is per key).

:class:`TurnMeta` reads them; its methods return the patches that change them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..state import ParentInfo, TurnInfo

__all__ = [
    "RESERVED_PREFIX",
    "Answer",
    "TurnMeta",
    "app_meta",
    "parent_meta",
]

RESERVED_PREFIX = "helix."
_TURN = "helix.turn"
_INITIATOR = "helix.initiator"
_PARENT = "helix.parent"
_ANSWER = "helix.answer."


def app_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The app's own part of a session's ``meta`` (the engine's keys left out)."""
    return {k: v for k, v in meta.items() if not k.startswith(RESERVED_PREFIX)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """An answer to a paused call: an approval (``approved``, ``reason``) or a client tool's
    ``output`` (with the time it arrived, for ``client_tool_timeout``)."""

    approved: bool | None = None
    reason: str | None = None
    output: Any = None
    at: float = 0.0

    @property
    def is_approval(self) -> bool:
        return self.approved is not None

    def to_json(self) -> dict[str, Any]:
        if self.is_approval:
            return {"approved": self.approved, "reason": self.reason}
        return {"output": self.output, "at": self.at}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        if "approved" in data:
            return cls(approved=bool(data["approved"]), reason=data.get("reason"))
        return cls(output=data.get("output"), at=float(data.get("at") or 0.0))


def parent_meta(parent: ParentInfo) -> dict[str, Any]:
    """A sub-agent session's parent, as stored."""
    return {
        "call_id": parent.call_id,
        "session_id": parent.session_id,
        "root_session_id": parent.root_session_id,
        "turn": {"id": parent.turn.id, "sequence": parent.turn.sequence},
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnMeta:
    """The engine's bookkeeping of one session (see the module docstring).

    Attributes:
        turns: Turns started so far.
        start_seq: The log position after which the current (or last) turn's model calls
            start.
        paused_at: When the session paused for answers (``None`` unless paused).
        initiator: What the first caller's ``auth`` was stored as (JSON), or ``None``.
        parent: A sub-agent session's parent call (as stored), or ``None``.
        answers: Answers to paused calls, by call id.
    """

    turns: int = 0
    start_seq: int = 0
    paused_at: float | None = None
    initiator: Any = None
    parent: Mapping[str, Any] | None = None
    answers: Mapping[str, Answer] = field(default_factory=dict)

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> TurnMeta:
        turn = meta.get(_TURN) or {}
        return cls(
            turns=int(turn.get("turns", 0)),
            start_seq=int(turn.get("start_seq", 0)),
            paused_at=turn.get("paused_at"),
            initiator=meta.get(_INITIATOR),
            parent=meta.get(_PARENT),
            answers={
                key.removeprefix(_ANSWER): Answer.from_json(value)
                for key, value in meta.items()
                if key.startswith(_ANSWER) and isinstance(value, Mapping)
            },
        )

    @staticmethod
    def new_session(initiator: Any, parent: ParentInfo | None) -> dict[str, Any]:
        """The engine's meta of a session a turn creates."""
        meta: dict[str, Any] = {}
        if initiator is not None:
            meta[_INITIATOR] = initiator
        if parent is not None:
            meta[_PARENT] = parent_meta(parent)
        return meta

    def turn_info(self, message_id: str) -> TurnInfo:
        return TurnInfo(id=message_id, sequence=self.turns)

    def starting_at(self, start_seq: int) -> dict[str, Any]:
        """The patch that records this turn (``turns`` as counted here) and makes
        ``start_seq`` where its model calls start (a new turn, a branch, a rewind)."""
        return {_TURN: {"turns": self.turns, "start_seq": start_seq}}

    def settled(self, call_ids: list[str]) -> dict[str, Any]:
        """The patch that clears the answers of settled calls."""
        return {f"{_ANSWER}{call_id}": None for call_id in call_ids}

    def paused(self) -> dict[str, Any]:
        """The patch of a turn that pauses for answers."""
        return {_TURN: {"turns": self.turns, "start_seq": self.start_seq, "paused_at": time.time()}}

    @staticmethod
    def answer(call_id: str, answer: Answer) -> dict[str, Any]:
        """The patch that records an answer to a paused call."""
        return {f"{_ANSWER}{call_id}": answer.to_json()}

    def foreign_answers(self) -> dict[str, Any]:
        """The patch that clears every answer (a branch's copy of its source's)."""
        return {f"{_ANSWER}{call_id}": None for call_id in self.answers}
