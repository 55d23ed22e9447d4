"""``Executor``: runs agents in durable sessions; the one entry point of the session engine.

Every operation on a session goes through it: turns (``run``, ``start``), answers to paused
calls, context from the app, rewinds and branches, and reading (the log, the context rows,
the stored UI messages). The chat server calls nothing else. This module owns the front door:
the constructor and the turns; the rest comes from one mixin per concern (``_answering``,
``_app_context``, ``_control``, ``_history``, ``_authorization``, ``_mcp``, ``_run_sync``,
``_resolve``, ``_turn_policies``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from .._limits import check_session_id
from ..agent import Agent, OutputT
from ..chunks import ErrorChunk
from ..errors import InvalidRequestError
from ..loop import StreamTextResult, has_tool_call, step_count_is
from ..loop._options import LoopOptions, RunKeywords, documents_options, options_over, split_options
from ..loop._setup import LoopCall, RunCheck, check_run, setup_run
from ..state import ParentInfo, SubAgent
from ..store import MemoryStore, Store
from ..tools import FINISH_TOOL_NAME
from ._answering import Answers, SessionAnswers
from ._app_context import SessionContext
from ._authorization import DEFAULT_SIGN_IN_TTL, SessionAuthorization
from ._control import SessionControl
from ._history import SessionHistory
from ._input import Input, checked_input
from ._lease import FencedWriter
from ._mcp import SessionServers
from ._queued import QueuedTurns
from ._request import TurnRequest
from ._resolve import CallResolution
from ._run_sync import SyncTurns
from ._turn import run_turn
from ._turn_policies import TurnPolicies

if TYPE_CHECKING:
    from ..auth import TokenStore
    from ..sandbox import SandboxProvider
    from ..telemetry import TelemetrySettings

__all__ = ["Executor", "default_identity"]


def default_identity(auth: Any) -> Any:
    """What of a caller's ``auth`` is stored as a session's initiator by default: an id (a
    ``str`` or an ``int``) as it is; anything else is not stored (it may hold credentials)."""
    if isinstance(auth, (str, int)) and not isinstance(auth, bool):
        return auth
    return None


class Executor(
    SessionAnswers,
    SessionContext,
    SessionControl,
    SessionHistory,
    SessionAuthorization,
    SessionServers,
    SyncTurns,
    CallResolution,
    TurnPolicies,
):
    """Runs agents in sessions stored in ``store``.

    Example::

        executor = hs.Executor(store=hs.SQLiteStore("helix.db"))
        run = executor.run(agent, "session-1", "What is the weather in Paris?")
        async for chunk in run: ...
        await executor.add_context("session-1", [hs.instruction("Answer in French.")])

    Args:
        store: Where sessions live; a fresh :class:`~helix_stream.store.MemoryStore` if omitted.
        telemetry: Default telemetry for runs (an agent's own settings win).
        identify: ``identify(auth)``: what of the first caller is stored as the session's
            initiator (``current_session().auth.initiator``), and the principal id tools'
            tokens are kept under (``identify(session.auth.current)``). It must be JSON-safe;
            default: :func:`default_identity` (an id string or int, nothing else — never
            credentials).
        auth_secret: The secret (at least 32 bytes) sign-in states are signed with and PKCE
            verifiers derived from; every process that completes sign-ins needs the same one.
            Without it a tool that needs a sign-in cannot park its turn: its miss is its error.
        token_store: Where tools' tokens are kept (an ``hs.EncryptedTokenStore`` over the
            session store, say); default: in memory, per executor.
        sign_in_ttl: Seconds a sign-in link stays good.

    Raises:
        FrameworkNotSupportedError: ``auth_secret`` with a store that keeps no sign-ins
            (its ``sign_in_table`` is ``None``): nothing is written, nothing falls back.
        InvalidRequestError: ``sign_in_ttl`` is not a positive number.
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        telemetry: TelemetrySettings | None = None,
        identify: Callable[[Any], Any] = default_identity,
        auth_secret: str | bytes | None = None,
        token_store: TokenStore | None = None,
        sign_in_ttl: float = DEFAULT_SIGN_IN_TTL,
    ) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        self.telemetry = telemetry
        self.identify = identify
        self._init_authorization(auth_secret, token_store, sign_in_ttl)
        # The sandbox providers of the agents run here, by agent name (close_sandbox).
        self._sandboxes: dict[str, SandboxProvider] = {}
        self._servers = {}  # the MCP servers of the agents run here, to close (SessionServers)
        self._queued = QueuedTurns()  # messages waiting for the running turn to end (queue)

    # -- running ---------------------------------------------------------------------------

    @documents_options
    def run(
        self,
        agent: Agent[OutputT],
        session_id: str,
        input: Input = None,
        *,
        answers: Answers = (),
        message_id: str | None = None,
        auth: Any = None,
        channel: str = "python",
        on_stop_requested: Callable[[], None] | None = None,
        **options: Unpack[RunKeywords],
    ) -> StreamTextResult[OutputT]:
        """Run one turn of ``agent`` in session ``session_id`` (created on first use).

        Returns the same streaming result as :func:`~helix_stream.stream_text`; the run starts
        when it is iterated or awaited. A refusal (the session is running, a call still waits
        for its answer) is the run's error, and nothing is written.

        Args:
            agent: The agent to run.
            session_id: The session; created with ``agent.name`` if it does not exist.
            input: The user's new message (a string or a message dict), or ``None`` to
                continue without one.
            answers: Answers to the calls a paused turn left waiting
                (:class:`ApprovalAnswer`, :class:`ToolAnswer`); answers to calls the session
                does not wait on are ignored.
            message_id: The id of the assistant UI message this turn produces.
            auth: Who is calling (``current_session().auth.current``); see ``identify``.
            channel: Where the turn came in, as hooks see it (``ctx.channel.kind``): the
                chat server passes ``"http"``.
            on_stop_requested: Called when another process asks this turn to stop
                (:meth:`request_stop`), within one lease renewal; it should stop the turn
                (the chat server's stops it as its stop route does). ``None``: not asked.
            {run options}
            **litellm_params: As for ``stream_text`` (over ``agent.settings``). A run option
                given (not ``None``) wins over the agent's; telemetry falls back to ours.

        Raises:
            TypeError: an unknown keyword, naming the closest known one (nothing written).
            ToolContextError: a tool's context is missing or invalid (nothing was written).
            InvalidRequestError: ``input`` has the wrong shape or invalid text (a lone
                surrogate, a file content part that is not what it says), ``session_id`` is
                not a valid id, or an option or litellm param cannot be used (nothing was
                written). A run without ``input`` on a session that waits for nothing (its
                last turn ended with the assistant's answer) is refused as the run's error.
            TypeError: ``identify(auth)`` is not JSON-safe (nothing was written).
        """
        return self._turn(
            agent,
            session_id,
            input,
            answers=answers,
            message_id=message_id,
            auth=auth,
            channel=channel,
            on_stop_requested=on_stop_requested,
            options=options,
        )

    def _turn(
        self,
        agent: Agent[Any],
        session_id: str,
        input: Input,
        *,
        answers: Answers = (),
        message_id: str | None = None,
        auth: Any = None,
        parent: ParentInfo | None = None,
        channel: str = "python",
        on_stop_requested: Callable[[], None] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> StreamTextResult[Any]:
        """A turn of ``agent``, checked before anything runs (``parent``: of a sub-agent)."""
        check_session_id(session_id)
        # No lone surrogate, no absurd nesting, no file that is not what it says (README):
        # refused before writing.
        message = None if input is None else checked_input(input)
        _check_identity(self.identify(auth))
        given, litellm_params = split_options(options or {})
        merged = options_over(agent, given, litellm_params)
        if merged.telemetry is None:
            merged = replace(merged, telemetry=self.telemetry)
        self._own_servers(agent)  # the turn adds their tools (and checks telemetry with them)
        request = TurnRequest(
            store=self.store,
            writer=FencedWriter(self.store),
            identify=self.identify,
            run_child=self._run_child,
            agent=agent,
            session_id=session_id,
            message=message,
            setup=_checked(_agent_call(agent, session_id), merged, servers=bool(agent.servers)),
            answers=list(answers),
            message_id=message_id,
            auth=auth,
            parent=parent,
            channel=channel,
            authorization=self._turn_authorization(agent),
            on_stop_requested=on_stop_requested,
        )
        if agent.sandbox is not None:
            self._sandboxes[agent.name] = agent.sandbox
        return StreamTextResult(lambda: run_turn(request))

    def _run_child(
        self, agent: SubAgent, session_id: str, prompt: str, *, auth: Any, parent: ParentInfo
    ) -> StreamTextResult[Any]:
        """A sub-agent's turn in its child session (``Agent.as_tool``, which gives itself)."""
        if not isinstance(agent, Agent):
            raise InvalidRequestError(f"A sub-agent is an hs.Agent, not {type(agent).__name__}.")
        return self._turn(agent, session_id, prompt, auth=auth, parent=parent, channel="subagent")

    async def start(
        self,
        agent: Agent[OutputT],
        session_id: str,
        input: Input = None,
        *,
        answers: Answers = (),
        message_id: str | None = None,
        auth: Any = None,
        channel: str = "python",
        on_stop_requested: Callable[[], None] | None = None,
        **options: Unpack[RunKeywords],
    ) -> StreamTextResult[OutputT]:
        """Like :meth:`run`, but start the turn now: a refusal raises here, before any chunk.

        What a server needs: ``await executor.start(...)`` claims the session (or raises
        ``SessionBusyError``, ``StateError``, ...) before the response starts, so a refusal
        can still be an HTTP error. Iterate or close the result: the session stays claimed
        until then.

        Takes the same arguments as :meth:`run`.
        """
        result = self.run(
            agent,
            session_id,
            input,
            answers=answers,
            message_id=message_id,
            auth=auth,
            channel=channel,
            on_stop_requested=on_stop_requested,
            **options,
        )
        iterator = result.__aiter__()
        first = await anext(iterator)
        if isinstance(first, ErrorChunk):
            await result.aclose()
            raise first.error
        return StreamTextResult.started(first, iterator)


def _check_identity(initiator: Any) -> None:
    """Refuse (a programming error, not the caller's) an initiator no store can hold."""
    try:
        json.dumps(initiator, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"Executor(identify=...) returned a {type(initiator).__name__}, which cannot be "
            f"stored as the session's initiator: it must be JSON-safe ({exc}). Return an id."
        ) from None


def _checked(call: LoopCall, options: LoopOptions, *, servers: bool) -> RunCheck:
    """The run checked now, and set up now unless the agent has MCP servers: then its one
    setup is at the turn, with the servers' tools (``session/_mcp.py``)."""
    if not servers:
        return setup_run(call, options)
    return check_run(call, options)


def _agent_call(agent: Agent, session_id: str) -> LoopCall:
    """What one of ``agent``'s turns asks the loop (its options come from ``agent`` too)."""
    stop_when = [step_count_is(agent.max_steps)]
    if agent.output_schema is not None:
        stop_when.append(has_tool_call(FINISH_TOOL_NAME))
    return LoopCall(
        operation="invoke_agent",
        model=agent.model,
        system=agent.system_prompt,
        tools=agent.tool_map,
        output=agent.output_schema,
        output_mode="tool",
        stop_when=tuple(stop_when),
        agent_name=agent.name,
        conversation_id=session_id,
        where="Agent(settings=...) or Executor.run()",
    )
