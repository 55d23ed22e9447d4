"""``Executor``: runs agents in durable sessions; the one entry point of the session engine.

Every operation on a session goes through it: turns (``run``, ``start``), answers to paused
calls, context from the app, rewinds and branches, and reading (the log, the context rows,
the stored UI messages). The chat server calls nothing else.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from .._limits import check_key, check_session_id
from ..agent import Agent, OutputT
from ..chunks import ErrorChunk
from ..context import (
    APP_SOURCE,
    LATE_ANSWER_SOURCE,
    ContextAdded,
    ContextItemLike,
    unknown_tools,
    validate_items,
)
from ..errors import InvalidRequestError, StateError
from ..loop import StreamTextResult, has_tool_call, step_count_is
from ..loop._options import LoopOptions, RunKeywords, documents_options, options_over, split_options
from ..loop._setup import LoopCall, RunCheck, check_run, setup_run
from ..state import ParentInfo, SubAgent
from ..store import LogRecord, MemoryStore, Store
from ..tools import FINISH_TOOL_NAME
from ._answers import ApprovalAnswer, ToolAnswer, by_call
from ._authorization import DEFAULT_SIGN_IN_TTL, SessionAuthorization
from ._history import SessionHistory, check_idle
from ._input import Input, checked_input
from ._lease import STOP_KEY, FencedWriter
from ._mcp import SessionServers
from ._meta import TurnMeta
from ._pending import late_answer_row, waiting_calls
from ._queued import QueuedTurns
from ._request import TurnRequest
from ._resolve import CallResolution
from ._run_sync import SyncTurns
from ._sandbox import close_sandboxes
from ._turn import run_turn
from ._turn_policies import TurnPolicies

if TYPE_CHECKING:
    from ..auth import TokenStore
    from ..sandbox import SandboxProvider
    from ..telemetry import TelemetrySettings

__all__ = ["Executor", "default_identity"]

Answers = Sequence[ApprovalAnswer | ToolAnswer]


def default_identity(auth: Any) -> Any:
    """What of a caller's ``auth`` is stored as a session's initiator by default: an id (a
    ``str`` or an ``int``) as it is; anything else is not stored (it may hold credentials)."""
    if isinstance(auth, (str, int)) and not isinstance(auth, bool):
        return auth
    return None


class Executor(
    SessionHistory, SessionAuthorization, SessionServers, SyncTurns, CallResolution, TurnPolicies
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

    async def request_stop(self, session_id: str, *, timeout: float = 30.0) -> bool:
        """Stop the session's running turn, wherever it runs: in this process or another one
        sharing the store (a replica). Returns once the turn has ended.

        The request is written to the session; the running turn's lease heartbeat reads it
        back within ``lease_renew_seconds`` and calls the turn's ``on_stop_requested`` (see
        :meth:`run`), which the chat server gives every turn: it ends as its stop route ends
        one (what was streamed stored as interrupted, the session idle).

        Returns:
            ``True`` once the turn has ended, ``False`` if no turn was running (or its
            process is gone: its lease expired) or it had not ended after ``timeout``.

        Raises:
            SessionNotFoundError: no such session.
        """
        loop = asyncio.get_running_loop()
        session = await self.session(session_id)
        token = session.lease_token
        if session.status != "running" or token is None or session.lease_expired():
            return False
        await self.store.update_session_meta(session_id, {STOP_KEY: token})
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            await asyncio.sleep(0.1)  # a stop is rare: polling its end costs nothing that counts
            now = await self.store.get_session(session_id)
            if now is None or now.lease_token != token or now.status != "running":
                return True
            if now.lease_expired():
                return False  # its process is gone: the next turn takes the session over
        return False

    # -- answers to a paused turn ----------------------------------------------------------

    async def answer(self, session_id: str, answers: Answers) -> None:
        """Record answers to the calls a paused turn left waiting; the next ``run()`` of the
        session acts on them.

        An approval runs its call — unless the tool was switched off meanwhile (even by a
        switch-off still queued): then nothing runs and the call gets ``tool_inactive``. A
        client tool's output that answers no waiting call but a call of the log (one already
        settled as timed out, say) is delivered as a ``late-answer`` notice row instead.

        Raises:
            SessionNotFoundError: no such session.
            SessionBusyError: the session is running.
            StateError: an answer names no call of the session (nothing was written).
        """
        snapshot = await self.store.read_snapshot(session_id)
        check_idle(session_id, snapshot.session)
        waiting = waiting_calls(snapshot.log)
        matched, unmatched = by_call(answers, waiting)
        late = [_late_row(snapshot.log, answer) for answer in unmatched]
        for answer, row in zip(unmatched, late, strict=True):
            if row is None:
                raise _unknown_call(session_id, answer)
        patch: dict[str, Any] = {}
        for call_id, recorded in matched.items():
            patch.update(TurnMeta.answer(call_id, recorded))
        if patch:
            await self.store.update_session_meta(session_id, patch)
        rows = [row for row in late if row is not None]
        if rows:
            # Queued, not appended: the log may end with calls still waiting for their results.
            await self.store.enqueue_context(
                session_id,
                [{k: v for k, v in row.items() if k != "origin"} for row in rows],
                source=LATE_ANSWER_SOURCE,
                origin={"type": LATE_ANSWER_SOURCE},
            )

    async def respond_to_approval(
        self, session_id: str, approval_id: str, approved: bool, reason: str | None = None
    ) -> None:
        """Answer one ``tool-approval-request`` (see :meth:`answer`).

        Raises:
            SessionNotFoundError, SessionBusyError, StateError: as :meth:`answer`.
        """
        await self.answer(session_id, [ApprovalAnswer(approval_id, bool(approved), reason)])

    async def submit_tool_result(self, session_id: str, tool_call_id: str, output: Any) -> None:
        """Give a client tool's answer (see :meth:`answer`).

        Raises:
            SessionNotFoundError, SessionBusyError, StateError: as :meth:`answer`.
        """
        await self.answer(session_id, [ToolAnswer(tool_call_id, output)])

    # -- context from the app --------------------------------------------------------------

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

    # -- sandboxes ----------------------------------------------------------------------------

    async def close_sandbox(self, session_id: str, agent: Agent | None = None) -> None:
        """End the session's sandbox: its commands are stopped, its files gone, and the
        session forgets it (the next ``get_sandbox()`` makes a new one).

        Args:
            session_id: The session.
            agent: Whose sandbox to end; by default every sandbox the session has, of the
                agents this executor ran (after a restart, pass the agent).

        Raises:
            SessionNotFoundError: no such session.
            SessionBusyError: a turn of the session is running.
            InvalidRequestError: the session has a sandbox of an agent this executor does
                not know (pass ``agent=``), or ``agent`` has no sandbox (nothing was closed).
        """
        if agent is None:
            await close_sandboxes(self.store, session_id, self._sandboxes)
            return
        if agent.sandbox is None:
            raise InvalidRequestError(f"agent {agent.name!r} has no sandbox (Agent(sandbox=...))")
        providers = {agent.name: agent.sandbox}
        await close_sandboxes(self.store, session_id, providers, agent=agent.name)


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


def _unknown_call(session_id: str, answer: ApprovalAnswer | ToolAnswer) -> StateError:
    if isinstance(answer, ApprovalAnswer):
        return StateError(
            f"no call of session {session_id!r} is waiting for approval {answer.approval_id!r}"
        )
    return StateError(f"session {session_id!r} has no tool call {answer.tool_call_id!r}")


def _late_row(
    log: Sequence[LogRecord], answer: ApprovalAnswer | ToolAnswer
) -> dict[str, Any] | None:
    """The late-answer row of a client answer to a call of the log that waits no more."""
    if not isinstance(answer, ToolAnswer):
        return None
    for record in log:
        if record.role != "assistant":
            continue
        for call in record.payload.get("tool_calls") or []:
            if call["id"] == answer.tool_call_id:
                return late_answer_row(call["function"]["name"], call["id"], answer.output)
    return None
