"""What the chat route does with a user message that arrives while a turn runs.

This module owns the route's side of the ``turn_policy`` option (docs/guides/serving.md,
"Steering"): the executor refuses a second turn of a running session (``SessionBusyError``);
with ``"steer"`` the message goes to the running turn (``Executor.steer``) and the request is
answered at once (202), with ``"queue"`` it waits for its turn (``Executor.queue``) and the
response streams that turn, with ``"reject"`` the refusal stands (409, nothing written).
A request that carries no new message (a continuation, answers to paused calls) is refused
as before under every policy.
"""

from __future__ import annotations

from typing import Any

from ..agent import TURN_POLICIES, Agent, TurnPolicy
from ..errors import SessionBusyError
from ..loop import StreamTextResult
from ..session import Executor, Steered

__all__ = ["check_turn_policy", "start_or_steer", "turn_policy"]


def check_turn_policy(value: TurnPolicy | None) -> None:
    """Refuse, at startup, a policy that is not one.

    Raises:
        ValueError: ``value`` is not ``"steer"``, ``"queue"``, ``"reject"`` or ``None``.
    """
    if value is not None and value not in TURN_POLICIES:
        raise ValueError(f"turn_policy must be one of {list(TURN_POLICIES)}, not {value!r}")


def turn_policy(server: TurnPolicy | None, agent: Agent[Any]) -> TurnPolicy:
    """The policy in force: the server's, else the agent's, else ``"steer"``."""
    return server or agent.turn_policy or "steer"


async def start_or_steer(
    executor: Executor,
    agent: Agent[Any],
    session_id: str,
    user_input: dict[str, Any] | None,
    *,
    policy: TurnPolicy,
    user_message_id: str | None,
    **start: Any,
) -> StreamTextResult[Any] | Steered:
    """The started turn that answers the request, or, when the message was steered to the
    running turn, what :meth:`Executor.steer` did.

    Raises:
        SessionBusyError: a turn runs and the request has no new message, or the policy is
            ``"reject"`` (nothing written); with ``"queue"``, a turn still ran after the
            queue's wait.
    """
    try:
        return await executor.start(agent, session_id, user_input, **start)
    except SessionBusyError:
        if user_input is None or policy == "reject":
            raise
    if policy == "queue":
        return await executor.queue(session_id, user_input, agent=agent, **start)
    steered = await executor.steer(session_id, user_input, message_id=user_message_id)
    if steered.running:
        return steered
    try:
        # The turn ended before the message was stored: a turn without input answers it.
        return await executor.start(agent, session_id, None, **start)
    except SessionBusyError:
        return Steered(recorded=steered.recorded, running=True)  # another one took it
