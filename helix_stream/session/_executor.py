"""``Executor``: runs agents in durable sessions; the one entry point of the session engine.

Every operation on a session goes through it: turns (``run``, ``start``), answers to paused
calls, context from the app, rewinds and branches, and reading (the log, the context rows,
the stored UI messages). The chat server calls nothing else.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._limits import check_json, check_key, check_session_id, show
from .._options import options_over, split_options
from ..chunks import ErrorChunk
from ..context import (
    APP_SOURCE,
    LATE_ANSWER_SOURCE,
    ContextAdded,
    ContextItemLike,
    ContextRow,
    unknown_tools,
    validate_items,
)
from ..errors import InvalidRequestError, SessionBusyError, SessionNotFoundError, StateError
from ..loop import StreamTextResult, has_tool_call, step_count_is
from ..loop._setup import LoopCall, setup_run
from ..state import ParentInfo
from ..store import Checkpoint, LogRecord, MemoryStore, SessionRecord, Store
from ..tools import FINISH_TOOL_NAME
from ._answers import ApprovalAnswer, ToolAnswer, by_call
from ._meta import TurnMeta, app_meta, forget_sandboxes
from ._pending import late_answer_row, waiting_calls
from ._records import AssistantRecord
from ._sandbox import close_sandboxes
from ._turn import TurnRequest, run_turn
from ._ui import ui_messages

if TYPE_CHECKING:
    from ..agent import Agent
    from ..sandbox import SandboxProvider
    from ..telemetry import TelemetrySettings

__all__ = ["Executor", "default_identity"]

Input = str | Mapping[str, Any] | None
Answers = Sequence[ApprovalAnswer | ToolAnswer]


def default_identity(auth: Any) -> Any:
    """What of a caller's ``auth`` is stored as a session's initiator by default: an id (a
    ``str`` or an ``int``) as it is; anything else is not stored (it may hold credentials)."""
    if isinstance(auth, (str, int)) and not isinstance(auth, bool):
        return auth
    return None


def _input_message(value: Input) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"role": "user", "content": value}
    if (
        isinstance(value, Mapping)
        and value.get("role") in ("user", "system")
        and "content" in value
    ):
        return dict(value)
    raise InvalidRequestError(
        "input must be a string or a message like {'role': 'user', 'content': '...'}"
    )


class Executor:
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
            initiator (``current_session().auth.initiator``). It must be JSON-safe; default:
            :func:`default_identity` (an id string or int, nothing else — never credentials).
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        telemetry: TelemetrySettings | None = None,
        identify: Callable[[Any], Any] = default_identity,
    ) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        self.telemetry = telemetry
        self.identify = identify
        # The sandbox providers of the agents run here, by agent name (close_sandbox).
        self._sandboxes: dict[str, SandboxProvider] = {}

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        agent: Agent,
        session_id: str,
        input: Input = None,
        *,
        answers: Answers = (),
        message_id: str | None = None,
        auth: Any = None,
        channel: str = "python",
        **options: Any,
    ) -> StreamTextResult:
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
            **options: The run options of ``stream_text`` (``runtime_context``,
                ``tools_context``, ``telemetry``, ``prepare_step``, ``stop_when``,
                ``middleware``, ``router``, ``max_retries``, ``prompt_cache``, ``on_chunk``,
                ``on_step_finish``, ``on_finish``, ``on_error``), each over the agent's own
                when it is not ``None``; any other keyword is a litellm param (over
                ``agent.settings``). Telemetry falls back to the executor's.

        Raises:
            ToolContextError: a tool's context is missing or invalid (nothing was written).
            InvalidRequestError: ``input`` has the wrong shape or invalid text (a lone
                surrogate), ``session_id`` is not a valid id, or an option or litellm param
                cannot be used (nothing was written).
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
            options=options,
        )

    def _turn(
        self,
        agent: Agent,
        session_id: str,
        input: Input,
        *,
        answers: Answers = (),
        message_id: str | None = None,
        auth: Any = None,
        parent: ParentInfo | None = None,
        channel: str = "python",
        options: Mapping[str, Any] | None = None,
    ) -> StreamTextResult:
        """A turn of ``agent``, checked before anything runs (``parent``: of a sub-agent)."""
        check_session_id(session_id)
        message = _input_message(input)
        if message is not None:
            check_json(message)  # no lone surrogate, no absurd nesting: refused before writing
        _check_identity(self.identify(auth))
        given, litellm_params = split_options(options or {})
        merged = options_over(agent, given, litellm_params)
        if merged.telemetry is None:
            merged = replace(merged, telemetry=self.telemetry)
        request = TurnRequest(
            store=self.store,
            identify=self.identify,
            run_child=self._run_child,
            agent=agent,
            session_id=session_id,
            message=message,
            setup=setup_run(_agent_call(agent, session_id), merged),
            answers=list(answers),
            message_id=message_id,
            auth=auth,
            parent=parent,
            channel=channel,
        )
        if agent.sandbox is not None:
            self._sandboxes[agent.name] = agent.sandbox
        return StreamTextResult(lambda: run_turn(request))

    def _run_child(
        self, agent: Agent, session_id: str, prompt: str, *, auth: Any, parent: ParentInfo
    ) -> StreamTextResult:
        """A sub-agent's turn in its child session (``Agent.as_tool``)."""
        return self._turn(agent, session_id, prompt, auth=auth, parent=parent, channel="subagent")

    async def start(
        self, agent: Agent, session_id: str, input: Input = None, **options: Any
    ) -> StreamTextResult:
        """Like :meth:`run`, but start the turn now: a refusal raises here, before any chunk.

        What a server needs: ``await executor.start(...)`` claims the session (or raises
        ``SessionBusyError``, ``StateError``, ...) before the response starts, so a refusal
        can still be an HTTP error. Iterate or close the result: the session stays claimed
        until then.

        Takes the same arguments as :meth:`run`.
        """
        result = self.run(agent, session_id, input, **options)
        iterator = result.__aiter__()
        first = await anext(iterator)
        if isinstance(first, ErrorChunk):
            await result.aclose()
            raise first.error
        return StreamTextResult.started(first, iterator)

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
        _check_idle(session_id, snapshot.session)
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

    # -- rewinds and branches ---------------------------------------------------------------

    async def checkpoints(self, session_id: str) -> list[Checkpoint]:
        """The session's checkpoints, oldest first: one per finished step (log position,
        active tools, define_state snapshot).

        Raises:
            SessionNotFoundError: no such session.
        """
        return await self.store.checkpoints(session_id)

    async def _checkpoint(self, session_id: str, checkpoint_id: str) -> Checkpoint:
        for checkpoint in await self.store.checkpoints(session_id):
            if checkpoint.id == checkpoint_id:
                return checkpoint
        raise StateError(f"session {session_id!r} has no checkpoint {checkpoint_id!r}")

    async def retry(self, session_id: str, checkpoint_id: str | None = None) -> None:
        """Make the session's last turn (or everything after a checkpoint) run again.

        With a ``checkpoint_id``, the log is truncated after that checkpoint (context rows like
        any other row: queued items whose rows go are delivered again, once; the step_context
        cursor, memory and active tools follow what is left; the define_state snapshot is the
        checkpoint's). Without one: if a step of the last turn committed, everything is kept —
        including the context rows of the step that failed, which the retry re-runs; if the
        turn failed on its first step, it is retried from its start, so that step's rows are
        made again (never lost, never doubled). Then ``run(agent, session_id)`` continues.

        Raises:
            SessionNotFoundError, StateError (unknown checkpoint), SessionBusyError (running).
        """
        session = await self.store.get_session(session_id)
        _check_idle(session_id, session)
        assert session is not None
        last = await self.store.last_seq(session_id)
        if checkpoint_id is not None:
            to_seq = (await self._checkpoint(session_id, checkpoint_id)).log_seq
        else:
            start = TurnMeta.read(session.meta).start_seq
            checkpoints = await self.store.checkpoints(session_id)
            committed = bool(checkpoints) and checkpoints[-1].log_seq > start
            to_seq = last if committed else start
        if to_seq < last:
            await self.store.rewind(session_id, to_seq)
        await self.store.set_status(session_id, "idle", expect=("idle", "paused", "failed"))

    async def regenerate(self, session_id: str, message_id: str | None = None) -> None:
        """Rewind the session to just after the user message that assistant message
        ``message_id`` answers (default: the last user message), so that the next
        ``run(agent, session_id)`` produces that answer again — what the AI SDK's
        ``regenerate()`` asks a server for.

        Everything after that user message goes, by the rewind rules of :meth:`retry` (queued
        items delivered again once, a tool's items with its call, the cursor reverting): an
        earlier message's regeneration truncates the conversation after it.

        Raises:
            SessionNotFoundError, SessionBusyError (running).
            InvalidRequestError: the session has no assistant message ``message_id``, or no
                user message to answer.
        """
        snapshot = await self.store.read_snapshot(session_id)
        _check_idle(session_id, snapshot.session)
        log = snapshot.log
        end = len(log)
        if message_id is not None:
            end = next(
                (
                    i
                    for i, r in enumerate(log)
                    if r.role == "assistant"
                    and AssistantRecord.decode(r.payload).message_id == message_id
                ),
                -1,
            )
            if end < 0:
                raise InvalidRequestError(
                    f"session {session_id!r} has no assistant message {message_id[:200]!r}"
                )
        users = [r.seq for r in log[:end] if r.role == "user"]
        if not users:
            raise InvalidRequestError(f"session {session_id!r} has no user message to answer")
        if users[-1] < log[-1].seq:
            await self.store.rewind(session_id, users[-1])
        await self.store.set_status(session_id, "idle", expect=("idle", "paused", "failed"))

    async def resume(
        self, session_id: str, mode: str = "continue", checkpoint_id: str | None = None
    ) -> None:
        """Make a session runnable again.

        ``mode="continue"`` recovers a session whose process died mid-turn (its status is still
        ``running``): the log is kept as it is — a step lost after its context rows were
        committed keeps them, and the recovering step's hook starts from their cursor. Call it
        only when the process that ran the session is gone. ``mode="from_checkpoint"`` rewinds
        to ``checkpoint_id`` as :meth:`retry` does. Then ``run(agent, session_id)`` continues.

        Raises:
            SessionNotFoundError, StateError (unknown checkpoint), InvalidRequestError (mode).
        """
        await self.session(session_id)
        if mode == "continue":
            await self.store.set_status(session_id, "idle", expect=("running", "failed"))
        elif mode == "from_checkpoint":
            if checkpoint_id is None:
                raise InvalidRequestError("resume(mode='from_checkpoint') needs checkpoint_id=")
            await self._checkpoint(session_id, checkpoint_id)  # refuse before writing anything
            await self.store.set_status(session_id, "idle", expect=("running", "failed", "paused"))
            await self.retry(session_id, checkpoint_id)
        else:
            raise InvalidRequestError(
                f"unknown resume mode {mode!r}; use 'continue' or 'from_checkpoint'"
            )

    async def branch(
        self, session_id: str, checkpoint_id: str | None = None, new_session_id: str | None = None
    ) -> str:
        """Copy the session up to a checkpoint (default: all of it) into a new session.

        The copy keeps the rows with their cursor and their effect on the active tools, but
        never the source's queue: an item still queued in the source is delivered only there.

        Returns:
            The new session's id.
        """
        await self.session(session_id)
        if checkpoint_id is not None:
            upto = (await self._checkpoint(session_id, checkpoint_id)).log_seq
        else:
            upto = await self.store.last_seq(session_id)
        new_id = new_session_id or f"{session_id}-branch-{uuid.uuid4().hex[:8]}"
        branch = await self.store.branch(session_id, new_id, upto_seq=upto)
        # The copy's own bookkeeping: its log ends at `upto`; the source's answers and pause
        # are the source's (an answer for a call of the source is not one for the branch).
        meta = TurnMeta.read(branch.meta)
        # A branch gets fresh sandboxes: the source's are the source's.
        fresh = forget_sandboxes(branch.meta)
        await self.store.update_session_meta(
            new_id, {**meta.foreign_answers(), **meta.starting_at(upto), **fresh}
        )
        return new_id

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

    # -- reading ---------------------------------------------------------------------------

    async def session(self, session_id: str) -> SessionRecord:
        """The session record; its ``meta`` is the app's own (the engine's keys left out).

        Raises:
            SessionNotFoundError: no such session.
        """
        record = await self.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(f"no session {show(session_id)}")
        return replace(record, meta=app_meta(record.meta))

    async def log(self, session_id: str) -> list[LogRecord]:
        """The session's whole log: messages and context rows, in order (for servers and audit)."""
        return await self.store.read_log(session_id)

    async def context_rows(self, session_id: str) -> list[ContextRow]:
        """The session's committed context rows, in order."""
        return [
            ContextRow.from_record(r)
            for r in await self.store.read_log(session_id)
            if r.role == "context"
        ]

    async def ui_messages(
        self,
        session_id: str,
        *,
        client_version: int = 7,
        on_error: Callable[[BaseException], str] | None = None,
        send_sources: bool = False,
    ) -> list[dict[str, Any]]:
        """The session as AI SDK UIMessages, for a chat UI; never contains context rows.

        The parts are what the live stream showed a client of ``client_version``: a tool's
        error text is masked unless ``on_error`` (given a
        :class:`~helix_stream.errors.ToolFailedError`) chooses the text; the sources the
        model cited are parts only with ``send_sources``.

        Raises:
            SessionNotFoundError: no such session.
        """
        snapshot = await self.store.read_snapshot(session_id)
        if snapshot.session is None:
            raise SessionNotFoundError(f"no session {show(session_id)}")
        return ui_messages(
            snapshot.log,
            client_version=client_version,
            on_error=on_error,
            send_sources=send_sources,
        )


def _check_identity(initiator: Any) -> None:
    """Refuse (a programming error, not the caller's) an initiator no store can hold."""
    try:
        json.dumps(initiator, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"Executor(identify=...) returned a {type(initiator).__name__}, which cannot be "
            f"stored as the session's initiator: it must be JSON-safe ({exc}). Return an id."
        ) from None


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


def _check_idle(session_id: str, session: SessionRecord | None) -> None:
    if session is None:
        raise SessionNotFoundError(f"no session {show(session_id)}")
    if session.status == "running":
        raise SessionBusyError(
            f"session {session_id!r} is running; wait for it, or call resume() if the process "
            "that ran it is gone"
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
