"""``Executor``: runs agents in durable sessions and takes context from the app.

A session's log (messages and context rows) lives in a :class:`~helix_stream.store.Store`.
``run()`` appends the user's input, then runs the loop with the built-in context pass first in
the step-middleware chain, appending each finished step's assistant and tool messages (and a
checkpoint) in one transaction. ``add_context()`` queues items from the app at any time —
idle, running or paused — for the next model call.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._pending import (
    answer_key,
    approval_id_for,
    approval_key,
    late_answer_item,
    waiting_calls,
)
from ._turn import Turn
from ._ui_log import log_to_ui_messages
from .agent import Agent
from .context import ContextItemLike, ContextRow, validate_items
from .errors import InvalidRequestError, SessionBusyError, SessionNotFoundError, StateError
from .loop import StreamTextResult, ToolCall, has_tool_call, step_count_is
from .loop._api import build_config
from .loop._run import RunState
from .state import ParentInfo
from .store import Checkpoint, LogRecord, MemoryStore, SessionRecord, Store
from .tools import FINISH_TOOL_NAME

if TYPE_CHECKING:
    from .telemetry import TelemetrySettings

__all__ = ["Executor"]

Input = str | Mapping[str, Any] | None


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
    """

    def __init__(
        self, store: Store | None = None, *, telemetry: TelemetrySettings | None = None
    ) -> None:
        self.store: Store = store if store is not None else MemoryStore()
        self.telemetry = telemetry

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        agent: Agent,
        session_id: str,
        input: Input = None,
        *,
        runtime_context: Mapping[str, Any] | None = None,
        tools_context: Mapping[str, Any] | None = None,
        telemetry: TelemetrySettings | None = None,
        message_id: str | None = None,
        auth: Any = None,
        _parent: ParentInfo | None = None,
        on_step_finish: Any = None,
        on_finish: Any = None,
        on_error: Any = None,
        on_chunk: Any = None,
        **litellm_params: Any,
    ) -> StreamTextResult:
        """Run one turn of ``agent`` in session ``session_id`` (created on first use).

        Returns the same streaming result as :func:`~helix_stream.stream_text`; the run starts
        when it is iterated or awaited.

        Args:
            agent: The agent to run.
            session_id: The session; created with ``agent.name`` if it does not exist.
            input: The user's new message (a string or a message dict), or ``None`` to
                continue without one.
            runtime_context, tools_context, telemetry: As for ``stream_text``.
            message_id: The id of the assistant UI message this turn produces.
            auth: Who is calling (``current_session().auth.current``; the first caller is
                kept as ``auth.initiator``). The server sets it from ``authenticate``.
            **litellm_params: Passed to litellm (over ``agent.settings``).

        Raises:
            ToolContextError: a tool's context is missing or invalid (nothing was written).
            InvalidRequestError: ``input`` has the wrong shape.
        """
        message = _input_message(input)
        stop_when = [step_count_is(agent.max_steps)]
        if agent.output_schema is not None:
            stop_when.append(has_tool_call(FINISH_TOOL_NAME))
        config, contexts = build_config(
            model=agent.model,
            system=agent.system,
            messages=[],
            prompt=None,
            tools=agent.tool_map,
            tools_context=tools_context,
            runtime_context=runtime_context,
            prepare_step=agent.prepare_step,
            stop_when=stop_when,
            telemetry=telemetry or agent.telemetry or self.telemetry,
            middleware=agent.middleware,
            callbacks={
                "on_chunk": on_chunk,
                "on_step_finish": on_step_finish,
                "on_finish": on_finish,
                "on_error": on_error,
            },
            litellm_params={**agent.settings, **litellm_params},
            operation="invoke_agent",
            agent_name=agent.name,
            conversation_id=session_id,
        )
        config.session_id = session_id
        config.message_id = message_id
        config.finish_tool = FINISH_TOOL_NAME if agent.output_schema is not None else None
        state = RunState()
        turn = Turn(
            store=self.store,
            agent=agent,
            session_id=session_id,
            message=message,
            config=config,
            state=state,
            contexts=contexts,
            auth=auth,
            parent=_parent,
            executor=self,
        )
        return StreamTextResult(turn.chunks, state)

    # -- answers to a paused turn ----------------------------------------------------------

    async def respond_to_approval(
        self, session_id: str, approval_id: str, approved: bool, reason: str | None = None
    ) -> None:
        """Answer a ``tool-approval-request``; the next ``run()`` of the session acts on it.

        Approving runs the call — unless its tool was switched off meanwhile (even by a
        switch-off still queued): then nothing runs and the call gets ``tool_inactive``.

        Raises:
            SessionNotFoundError: no such session.
            SessionBusyError: the session is running.
            StateError: no call of the session is waiting for this approval.
        """
        call = await self._waiting_call(session_id, approval_id=approval_id)
        answer = {"approved": bool(approved), "reason": reason}
        await self.store.update_session_meta(session_id, {approval_key(call.id): answer})

    async def submit_tool_result(self, session_id: str, tool_call_id: str, output: Any) -> None:
        """Give a client tool's answer; the next ``run()`` of the session continues with it.

        An answer after the agent's ``client_tool_timeout`` — or for a call that has already
        been settled as timed out — is delivered as a ``late-answer`` notice row instead.

        Raises:
            SessionNotFoundError: no such session.
            SessionBusyError: the session is running.
            StateError: the session has no client tool call with this id.
        """
        await self._idle_session(session_id)
        log_records = await self.store.read_log(session_id)
        if tool_call_id in {w.call.id for w in waiting_calls(log_records)}:
            answer = {"output": output, "at": time.time()}
            await self.store.update_session_meta(session_id, {answer_key(tool_call_id): answer})
            return
        for record in log_records:
            for call in (
                record.payload.get("tool_calls") or [] if record.role == "assistant" else []
            ):
                if call["id"] == tool_call_id:
                    item = late_answer_item(call["function"]["name"], tool_call_id, output)
                    await self.store.enqueue_context(
                        session_id,
                        validate_items([item], forced_source="late-answer"),
                        source="late-answer",
                        origin={"type": "late-answer"},
                    )
                    return
        raise StateError(f"session {session_id!r} has no tool call {tool_call_id!r}")

    async def _waiting_call(self, session_id: str, *, approval_id: str) -> ToolCall:
        await self._idle_session(session_id)
        for waiting in waiting_calls(await self.store.read_log(session_id)):
            if approval_id_for(waiting.call.id) == approval_id:
                return waiting.call
        raise StateError(
            f"no call of session {session_id!r} is waiting for approval {approval_id!r}"
        )

    # -- context from the app --------------------------------------------------------------

    async def add_context(
        self, session_id: str, items: Sequence[ContextItemLike], key: str | None = None
    ) -> int:
        """Queue context items for a session's next model call; return how many were recorded.

        Works whether the session is idle, running or paused. With a ``key`` (one request), a
        retry with the same items records nothing (0); the same key with other items is
        refused whole. Without a key every call records. Items get ``source="app"`` unless
        they name their own; ``"hook"`` is reserved for the step_context hook.

        Raises:
            ContextValidationError: an item is invalid (nothing was queued).
            SessionNotFoundError: no such session.
            ContextKeyConflictError: ``key`` was used before with other items (nothing written).
        """
        clean = validate_items(items, default_source="app")
        return await self.store.enqueue_context(
            session_id,
            clean,
            source="app",
            origin={"type": "app"},
            key=key,
            on_key_conflict="raise",
        )

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

    async def _idle_session(self, session_id: str) -> SessionRecord:
        session = await self.session(session_id)
        if session.status == "running":
            raise SessionBusyError(
                f"session {session_id!r} is running; wait for it, or call resume() if the process "
                "that ran it is gone"
            )
        return session

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
        session = await self._idle_session(session_id)
        if checkpoint_id is not None:
            to_seq = (await self._checkpoint(session_id, checkpoint_id)).log_seq
        else:
            start = int(session.meta.get("turn_start_seq", 0))
            checkpoints = await self.store.checkpoints(session_id)
            committed = bool(checkpoints) and checkpoints[-1].log_seq > start
            to_seq = await self.store.last_seq(session_id) if committed else start
        if to_seq < await self.store.last_seq(session_id):
            await self.store.rewind(session_id, to_seq)
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
        stale = {k: None for k in branch.meta if k.startswith(("approval:", "answer:"))}
        await self.store.update_session_meta(
            new_id, {**stale, "paused_at": None, "turn_start_seq": upto}
        )
        return new_id

    # -- reading ---------------------------------------------------------------------------

    async def session(self, session_id: str) -> SessionRecord:
        """The session record.

        Raises:
            SessionNotFoundError: no such session.
        """
        record = await self.store.get_session(session_id)
        if record is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return record

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
        self, session_id: str, *, on_error: Callable[[BaseException], str] | None = None
    ) -> list[dict[str, Any]]:
        """The session as AI SDK UIMessages, for a chat UI; never contains context rows.

        A tool's error text is masked as on the live stream, unless ``on_error`` (given a
        :class:`~helix_stream.errors.ToolFailedError`) chooses the text.
        """
        return log_to_ui_messages(await self.store.read_log(session_id), on_error)
