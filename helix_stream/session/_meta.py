"""The engine's own bookkeeping on a session, typed, kept apart from the app's ``meta``.

A store keeps one JSON ``meta`` object per session. The app's data lives there under its own
keys; the engine's lives under keys that start with ``helix.`` (reserved, like
``define_state`` names):

* ``helix.turn``: the turn counter, the current (or last) turn's id and whether it ended,
  where its model calls start in the log (a retry of a turn that failed on its first step
  rewinds to it), where its current part began (see :attr:`TurnMeta.part`), and when the
  session paused;
* ``helix.initiator``, ``helix.parent``: who started the session, and for a sub-agent's
  session the call that started it;
* ``helix.answer.<call id>``: an answer to a paused call, one key per call, so that two
  answers arriving at once never overwrite each other (the meta merge is per key); for a call
  parked on a sign-in, where its sign-in stands (``session/_authorization.py``);
* ``helix.sandbox.<agent name>``: the id of that agent's sandbox in the session, and whether
  it was prepared (``{"id": ..., "ready": true}``);
* ``helix.mcp.<server name>``: the tools an MCP server of the agent offers the session, fixed
  at its first turn (an encoded :class:`~helix_stream.mcp.MCPOffer`: the same bytes every
  turn, whatever the server lists later);
* ``helix.usage``: the session's usage totals (``session/_usage.py``).

:class:`TurnMeta` reads them; its methods return the patches that change them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..state import ParentInfo, TurnInfo

__all__ = [
    "RESERVED_PREFIX",
    "Answer",
    "StoredSandbox",
    "TurnMeta",
    "app_meta",
    "forget_sandboxes",
    "offers_patch",
    "parent_meta",
    "sandbox_patch",
    "sign_in_links",
    "stored_offers",
    "stored_sandboxes",
]

RESERVED_PREFIX = "helix."
_TURN = "helix.turn"
_INITIATOR = "helix.initiator"
_PARENT = "helix.parent"
_ANSWER = "helix.answer."
_SANDBOX = "helix.sandbox."
_MCP = "helix.mcp."


def app_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The app's own part of a session's ``meta`` (the engine's keys left out)."""
    return {k: v for k, v in meta.items() if not k.startswith(RESERVED_PREFIX)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """An answer to a paused call: an approval (``approved``, ``reason``), a client tool's
    ``output`` (with the time it arrived, for ``client_tool_timeout``), or where a call parked
    on a sign-in stands (``authorization``: ``"waiting"`` for it, ``"authorized"``, or
    ``"refused"``/``"failed"`` with the call's error text as ``reason``; ``strategy`` and the
    sign-in ``url`` with it)."""

    approved: bool | None = None
    reason: str | None = None
    output: Any = None
    at: float = 0.0
    authorization: str | None = None
    strategy: str | None = None
    url: str | None = None

    @property
    def is_approval(self) -> bool:
        return self.approved is not None

    def to_json(self) -> dict[str, Any]:
        if self.authorization is not None:
            sign_in = {"authorization": self.authorization, "strategy": self.strategy}
            return {**sign_in, "url": self.url, "reason": self.reason}
        if self.is_approval:
            return {"approved": self.approved, "reason": self.reason}
        return {"output": self.output, "at": self.at}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        if "authorization" in data:
            return cls(
                authorization=str(data["authorization"]),
                strategy=data.get("strategy"),
                url=data.get("url"),
                reason=data.get("reason"),
            )
        if "approved" in data:
            return cls(approved=bool(data["approved"]), reason=data.get("reason"))
        return cls(output=data.get("output"), at=float(data.get("at") or 0.0))


def sign_in_links(meta: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """The calls that wait for a sign-in, as a session's ``meta`` records them: call id ->
    (strategy, URL) (a reloaded chat shows their sign-in links again)."""
    out: dict[str, tuple[str, str]] = {}
    for call_id, answer in TurnMeta.read(meta).answers.items():
        if answer.authorization == "waiting" and answer.strategy and answer.url:
            out[call_id] = (answer.strategy, answer.url)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredSandbox:
    """An agent's sandbox as its session records it: the provider's ``id``, and ``ready``
    once it was laid out and ``sandbox_on_session`` succeeded."""

    id: str
    ready: bool = False


def stored_sandboxes(meta: Mapping[str, Any]) -> dict[str, StoredSandbox]:
    """The sandboxes a session records, by agent name."""
    out: dict[str, StoredSandbox] = {}
    for key, value in meta.items():
        if key.startswith(_SANDBOX) and isinstance(value, Mapping) and value.get("id"):
            out[key.removeprefix(_SANDBOX)] = StoredSandbox(
                id=str(value["id"]), ready=bool(value.get("ready"))
            )
    return out


def sandbox_patch(agent: str, sandbox: StoredSandbox | None) -> dict[str, Any]:
    """The patch that records ``agent``'s sandbox (``None``: forgets it)."""
    value = None if sandbox is None else {"id": sandbox.id, "ready": sandbox.ready}
    return {f"{_SANDBOX}{agent}": value}


def forget_sandboxes(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The patch that forgets every sandbox a session's ``meta`` records (a branch's copy)."""
    return {key: None for key in meta if key.startswith(_SANDBOX)}


def stored_offers(meta: Mapping[str, Any]) -> dict[str, str]:
    """The MCP offers a session records (encoded), by server name."""
    return {
        key.removeprefix(_MCP): value
        for key, value in meta.items()
        if key.startswith(_MCP) and isinstance(value, str)
    }


def offers_patch(offers: Mapping[str, str | None]) -> dict[str, Any]:
    """The patch that records encoded MCP offers by server name (``None``: forgets one)."""
    return {f"{_MCP}{server}": text for server, text in offers.items()}


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

    A turn keeps one id and one sequence for its whole life: a run that continues it — it
    paused for answers, failed, was cut short or lost its process — is the same turn, not a
    new one (``turns`` counts turns, not runs).

    Attributes:
        turns: Turns started so far (the current turn's sequence).
        turn_id: The current (or last) turn's id, its assistant UI message id.
        ended: That turn ended (its last step was written); a run without a new message then
            starts a new turn instead of carrying it on.
        start_seq: The log position after which the current (or last) turn's model calls
            start.
        part: Where the turn's current *part* began: the log position of the last checkpoint
            when it was opened, or when it resumed after a pause (a run that re-runs a part —
            after a failure, a crash — keeps it). The call sites of lifecycle hooks are
            counted from it, so that a re-run queues nothing twice.
        paused_at: When the session paused for answers (``None`` unless paused).
        initiator: What the first caller's ``auth`` was stored as (JSON), or ``None``.
        parent: A sub-agent session's parent call (as stored), or ``None``.
        answers: Answers to paused calls, by call id.
    """

    turns: int = 0
    turn_id: str | None = None
    ended: bool = False
    start_seq: int = 0
    part: int = 0
    paused_at: float | None = None
    initiator: Any = None
    parent: Mapping[str, Any] | None = None
    answers: Mapping[str, Answer] = field(default_factory=dict)

    @classmethod
    def read(cls, meta: Mapping[str, Any]) -> TurnMeta:
        turn = meta.get(_TURN) or {}
        return cls(
            turns=int(turn.get("turns", 0)),
            turn_id=turn.get("id"),
            ended=bool(turn.get("ended", False)),
            start_seq=int(turn.get("start_seq", 0)),
            part=int(turn.get("part", 0)),
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

    def turn_info(self) -> TurnInfo:
        return TurnInfo(id=self.turn_id or "", sequence=self.turns)

    def carried_on(self, *, resumes: bool, site: int, message_id: str | None) -> TurnMeta | None:
        """This session's current turn as a run without a new message carries it on, or
        ``None`` when that run starts a new turn (the last one ended, or none is recorded).

        Args:
            resumes: The run settles the calls the turn paused for (a new part begins).
            site: The log position of the session's last checkpoint.
            message_id: The id the caller chose for the turn's message, if any.
        """
        if self.turn_id is None or (self.ended and not resumes):
            return None
        # A rewind to before the part began makes this run a new part too.
        part = site if resumes or self.part > site else self.part
        return replace(self, turn_id=message_id or self.turn_id, part=part, ended=False)

    def new_turn(self, *, site: int, message_id: str) -> TurnMeta:
        """The bookkeeping of a new turn with id ``message_id``, opened at checkpoint ``site``."""
        return replace(self, turns=self.turns + 1, turn_id=message_id, part=site, ended=False)

    def _turn(self, **changes: Any) -> dict[str, Any]:
        value = {
            "turns": self.turns,
            "id": self.turn_id,
            "ended": self.ended,
            "start_seq": self.start_seq,
            "part": self.part,
            **changes,
        }
        return {_TURN: value}

    def starting_at(self, start_seq: int) -> dict[str, Any]:
        """The patch that records this turn (as counted here) and makes ``start_seq`` where
        its model calls start (a new turn, a branch, a rewind)."""
        return self._turn(start_seq=start_seq)

    def settled(self, call_ids: list[str]) -> dict[str, Any]:
        """The patch that clears the answers of settled calls."""
        return {f"{_ANSWER}{call_id}": None for call_id in call_ids}

    def paused(self) -> dict[str, Any]:
        """The patch of a turn that pauses for answers."""
        return self._turn(paused_at=time.time())

    def done(self) -> dict[str, Any]:
        """The patch of a turn whose last step was written without pausing: it ended."""
        return self._turn(ended=True)

    @staticmethod
    def answer(call_id: str, answer: Answer) -> dict[str, Any]:
        """The patch that records an answer to a paused call."""
        return {f"{_ANSWER}{call_id}": answer.to_json()}

    def foreign_answers(self) -> dict[str, Any]:
        """The patch that clears every answer (a branch's copy of its source's)."""
        return {f"{_ANSWER}{call_id}": None for call_id in self.answers}
