"""``Executor``: runs agents in durable sessions and takes context from the app.

A session's log (messages and context rows) lives in a :class:`~helix_stream.store.Store`.
``run()`` appends the user's input, then runs the loop with the built-in context pass first in
the step-middleware chain, appending each finished step's assistant and tool messages (and a
checkpoint) in one transaction. ``add_context()`` queues items from the app at any time —
idle, running or paused — for the next model call.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal

from .agent import Agent
from .chunks import Chunk, ErrorChunk
from .context import ContextItemLike, ContextPass, ContextRow, validate_items
from ._pending import approval_id_for, late_answer_item, settle_waiting_calls, waiting_calls
from .errors import HelixError, InvalidRequestError, SessionBusyError, SessionNotFoundError, StateError
from .loop import StepResult, StreamTextResult, has_tool_call, step_count_is
from .loop._api import _as_list, build_config
from .loop._run import LoopConfig, RunState, run_loop
from ._ui_log import log_to_ui_messages
from .store import Checkpoint, LogRecord, MemoryStore, SessionRecord, Store
from .tools import FINISH_TOOL_NAME, Tool, ToolContext
from .loop import ToolCall

if TYPE_CHECKING:
    from .telemetry import TelemetrySettings

__all__ = ["Executor"]

log = logging.getLogger("helix_stream.context")

Input = str | Mapping[str, Any] | None


def _input_message(value: Input) -> dict[str, Any] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {"role": "user", "content": value}
    if isinstance(value, Mapping) and value.get("role") in ("user", "system") and "content" in value:
        return dict(value)
    raise InvalidRequestError("input must be a string or a message like {'role': 'user', 'content': '...'}")


def _gate(context_pass: ContextPass) -> Any:
    async def gate(call: ToolCall) -> Literal["tool_inactive"] | None:
        # Active tools as folded from the log at this step's model call; __finish__ can never
        # be switched off (validation refuses it), so forced completion always can call it.
        if call.name != FINISH_TOOL_NAME and call.name in context_pass.fold.inactive:
            return "tool_inactive"
        return None

    return gate


def _then_append(
    preamble: Any, store: Store, session_id: str, message: dict[str, Any]
) -> Any:
    async def run() -> AsyncGenerator[Chunk, None]:
        async with aclosing(preamble()) as chunks:
            async for chunk in chunks:
                yield chunk
        await store.append_messages(session_id, [message])

    return run


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

    def __init__(self, store: Store | None = None, *, telemetry: TelemetrySettings | None = None) -> None:
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
            **litellm_params: Passed to litellm (over ``agent.settings``).

        Raises:
            ToolContextError: a tool's context is missing or invalid (nothing was written).
            InvalidRequestError: ``input`` has the wrong shape.
        """
        message = _input_message(input)
        context_pass = ContextPass(
            self.store,
            session_id,
            step_context=agent.step_context,
            limits=agent.step_context_limits,
            memory=agent.memory,
        )
        tools = agent.tool_map
        stop_when = [step_count_is(agent.max_steps)]
        if agent.output_schema is not None:
            stop_when.append(has_tool_call(FINISH_TOOL_NAME))
        config, contexts = build_config(
            model=agent.model,
            system=agent.system,
            messages=[],
            prompt=None,
            tools=tools,
            tools_context=tools_context,
            runtime_context=runtime_context,
            prepare_step=[context_pass, *_as_list(agent.prepare_step)],
            stop_when=stop_when,
            telemetry=telemetry or agent.telemetry or self.telemetry,
            middleware=agent.middleware,
            callbacks={"on_chunk": on_chunk, "on_finish": on_finish, "on_error": on_error},
            litellm_params={**agent.settings, **litellm_params},
            operation="invoke_agent",
        )
        config.session_id = session_id
        config.message_id = message_id
        config.finish_tool = FINISH_TOOL_NAME if agent.output_schema is not None else None
        config.make_tool_context = self._tool_context_factory(session_id)
        config.gate = _gate(context_pass)
        state = RunState()
        config.on_step_finish = [self._persist_step(session_id, config), *_as_list(on_step_finish)]
        return StreamTextResult(
            lambda: self._run(agent, session_id, message, config, state, contexts), state
        )

    async def _run(
        self,
        agent: Agent,
        session_id: str,
        message: dict[str, Any] | None,
        config: LoopConfig,
        state: RunState,
        contexts: dict[str, Any],
    ) -> AsyncGenerator[Chunk, None]:
        try:
            await self.store.create_session(session_id, agent_name=agent.name)
            if not await self.store.set_status(session_id, "running", expect=("idle", "paused", "failed")):
                raise SessionBusyError(
                    f"session {session_id!r} is already running; wait for its turn to end"
                )
        except HelixError as exc:
            state.error, state.done, state.finish_reason = exc, True, "error"
            yield ErrorChunk(error=exc)
            return
        try:
            session = await self.store.get_session(session_id)
            waiting = waiting_calls(await self.store.read_log(session_id))
            if waiting and message is None and config.message_id is None:
                config.message_id = waiting[0].message_id  # continue the paused turn's message
            if config.message_id is None:
                config.message_id = f"msg-{uuid.uuid4().hex[:16]}"
            if waiting:
                config.preamble = lambda: settle_waiting_calls(
                    store=self.store,
                    session_id=session_id,
                    waiting=waiting,
                    meta=session.meta if session else {},
                    tools=config.tools,
                    contexts=contexts,
                    make_context=config.make_tool_context,
                    recorder=config.recorder,
                    has_new_input=message is not None,
                    client_tool_timeout=agent.client_tool_timeout,
                )
            if message is not None:
                if waiting:
                    # Settle the waiting calls first so the log stays a valid conversation.
                    config.preamble = _then_append(config.preamble, self.store, session_id, message)
                else:
                    await self.store.append_messages(session_id, [message])
            async with aclosing(run_loop(config, state, contexts)) as chunks:
                async for chunk in chunks:
                    yield chunk
        finally:
            meta: dict[str, Any] = {}
            if state.error is not None:
                status = "failed"
            elif state.steps and state.steps[-1].pending:
                status, meta = "paused", {"paused_at": time.time()}
            else:
                status = "idle"
            if meta:
                await self.store.update_session_meta(session_id, meta)
            await self.store.set_status(session_id, status)

    def _persist_step(self, session_id: str, config: LoopConfig) -> Any:
        async def persist(step: StepResult) -> None:
            turn_id = config.message_id
            statuses = {r.tool_call_id: r.status for r in step.tool_results}
            records: list[dict[str, Any]] = []
            for m in step.response_messages:
                # Bookkeeping keys start with "_" and are stripped before the model sees them.
                if m["role"] == "assistant":
                    records.append({**m, "_message_id": turn_id})
                else:
                    records.append({**m, "_status": statuses.get(m.get("tool_call_id", ""), "output")})
            checkpoint = Checkpoint(
                id="", session_id=session_id, step_number=step.step_number, log_seq=0, state={}, created_at=0.0
            )
            await self.store.append_messages(session_id, records, checkpoint=checkpoint)

        return persist

    def _tool_context_factory(self, session_id: str) -> Any:
        def make(call: ToolCall, tool: Tool, context: Any) -> ToolContext:
            async def add(items: Sequence[ContextItemLike], position: int) -> int:
                # A tool's items always carry source "tool"; a re-run of the same call site
                # (same call id, same position) records nothing: first wins, never refused.
                clean = validate_items(items, forced_source="tool")
                for item in clean:
                    if item.get("enable"):
                        log.warning(
                            "core.context.enable_ignored: tool %r may switch tools off, never on; "
                            "its enable of %s has no effect",
                            tool.name,
                            item["enable"],
                            extra={"event": "core.context.enable_ignored", "session_id": session_id},
                        )
                return await self.store.enqueue_context(
                    session_id,
                    clean,
                    source="tool",
                    origin={"type": "tool", "tool_call_id": call.id, "tool_name": tool.name, "position": position},
                    key=f"call:{call.id}:{position}",
                    on_key_conflict="ignore",
                )

            return ToolContext(context=context, tool_call_id=call.id, tool_name=tool.name, _add_context=add)

        return make

    # -- answers to a paused turn ----------------------------------------------------------

    async def respond_to_approval(
        self, session_id: str, approval_id: str, approved: bool, reason: str | None = None
    ) -> None:
        """Answer a ``tool-approval-request``; the next ``run()`` of the session acts on it.

        Approving runs the call — unless its tool was switched off meanwhile (even by a
        switch-off still queued): then nothing runs and the call gets ``tool_inactive``.

        Raises:
            SessionNotFoundError: no such session.
            StateError: no call of the session is waiting for this approval.
        """
        call = await self._waiting_call(session_id, approval_id=approval_id)
        session = await self.session(session_id)
        approvals = {**session.meta.get("approvals", {}), call.id: {"approved": bool(approved), "reason": reason}}
        await self.store.update_session_meta(session_id, {"approvals": approvals})

    async def submit_tool_result(self, session_id: str, tool_call_id: str, output: Any) -> None:
        """Give a client tool's answer; the next ``run()`` of the session continues with it.

        An answer after the agent's ``client_tool_timeout`` — or for a call that has already
        been settled as timed out — is delivered as a ``late-answer`` notice row instead.

        Raises:
            SessionNotFoundError: no such session.
            StateError: the session has no client tool call with this id.
        """
        session = await self.session(session_id)
        log_records = await self.store.read_log(session_id)
        waiting = {w.call.id: w.call for w in waiting_calls(log_records)}
        if tool_call_id in waiting:
            answers = {**session.meta.get("tool_results", {}), tool_call_id: {"output": output, "at": time.time()}}
            await self.store.update_session_meta(session_id, {"tool_results": answers})
            return
        for record in log_records:
            if record.role == "assistant":
                for call in record.payload.get("tool_calls") or []:
                    if call["id"] == tool_call_id:
                        item = late_answer_item(call["function"]["name"], tool_call_id, output)
                        await self.store.enqueue_context(
                            session_id, [item], source="late-answer", origin={"type": "late-answer"}
                        )
                        return
        raise StateError(f"session {session_id!r} has no tool call {tool_call_id!r}")

    async def _waiting_call(self, session_id: str, *, approval_id: str) -> ToolCall:
        await self.session(session_id)
        for waiting in waiting_calls(await self.store.read_log(session_id)):
            if approval_id_for(waiting.call.id) == approval_id:
                return waiting.call
        raise StateError(f"no call of session {session_id!r} is waiting for approval {approval_id!r}")

    # -- context from the app --------------------------------------------------------------

    async def add_context(self, session_id: str, items: Sequence[ContextItemLike], key: str | None = None) -> int:
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
            session_id, clean, source="app", origin={"type": "app"}, key=key, on_key_conflict="raise"
        )

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
        return [ContextRow.from_record(r) for r in await self.store.read_log(session_id) if r.role == "context"]

    async def ui_messages(self, session_id: str) -> list[dict[str, Any]]:
        """The session as AI SDK UIMessages, for a chat UI; never contains context rows."""
        return log_to_ui_messages(await self.store.read_log(session_id))
