"""What ``Executor.run`` asks of one turn (:class:`TurnRequest`): read by the turn's opening
(``_open.py``) and by the MCP servers' listing (``_mcp.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..loop._setup import RunCheck
from ..state import ParentInfo, RunChild
from ..store import Store
from ._answers import ApprovalAnswer, ToolAnswer
from ._lease import FencedWriter

if TYPE_CHECKING:
    from ..agent import Agent
    from ._authorization import TurnAuthorization

__all__ = ["TurnRequest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnRequest:
    """What ``Executor.run`` asks of one turn (checked: see ``setup``).

    Attributes:
        store: Where the session lives (the turn reads it and queues context through it).
        writer: How the turn writes the session: with its lease (``_lease.FencedWriter``).
        identify: What of the caller's ``auth`` is stored as a new session's initiator.
        run_child: Runs a sub-agent's turn in a child session (``Agent.as_tool``).
        agent: The agent.
        session_id: The session.
        message: The user's new message as stored, or ``None`` to continue.
        setup: The run's checked call and options (set up once the turn has its tools:
            ``session/_mcp.py``).
        answers: Answers to the calls a paused turn left waiting.
        message_id: The id of the assistant UI message, when the caller chose it.
        auth: Who is calling.
        parent: For a sub-agent's session, the call that started it.
        channel: Where the turn came in (``"python"``, ``"http"``, ``"subagent"``).
        authorization: How the turn's tools resolve tokens and park on a sign-in.
        on_stop_requested: Called when another process asks the turn to stop
            (``Executor.request_stop``); ``None``: such requests are not looked for.
    """

    store: Store
    writer: FencedWriter
    identify: Callable[[Any], Any]
    run_child: RunChild
    agent: Agent
    session_id: str
    message: dict[str, Any] | None
    setup: RunCheck
    answers: Sequence[ApprovalAnswer | ToolAnswer] = ()
    message_id: str | None = None
    auth: Any = None
    parent: ParentInfo | None = None
    channel: str = "python"
    authorization: TurnAuthorization | None = None
    on_stop_requested: Callable[[], None] | None = None
