"""Settling a side-effect call whose outcome is unknown: ``Executor.resolve_call``.

A call the model got ``outcome_unknown`` for (``_side_effects.py``) stays open in the ledger
until the app says what happened: its output, its error, or "run it once more" (with the
call's own ``ctx.idempotency_key``, so the API it calls can tell a repeat). The outcome
reaches the model as a ``late-answer`` notice row at the session's next model call (queued
like a late client answer). A call is settled once: every refusal (no such session, no such
call, a call that is not waiting for its outcome, one settled already) is decided before
anything is written. Two settlements racing are told apart twice: the ledger's
compare-and-set, and the notice's request key (the same key with another outcome is a
conflict, so the loser writes nothing).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._tool_context import ToolContext
from ..context import LATE_ANSWER_SOURCE, validate_items
from ..errors import (
    CallAlreadySettledError,
    CallNotFoundError,
    CallNotInFlightError,
    ContextKeyConflictError,
    FrameworkNotSupportedError,
    InvalidRequestError,
    SessionNotFoundError,
)
from ..steps import ToolResult
from ..store import CallLedger, CallRow, CallState, Store
from ..telemetry._filters import redact, secret_strings
from ..tools import Tool, dump_output
from ._side_effects import capped, result_json

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["UNSET", "CallResolution"]

UNSET: Any = object()  # no output given (``None`` is an output)


class CallResolution:
    """``Executor.resolve_call`` (a base of the executor, over its ``store``)."""

    store: Store

    async def resolve_call(
        self,
        session_id: str,
        tool_call_id: str,
        *,
        output: Any = UNSET,
        error: str | None = None,
        rerun: bool = False,
        agent: Agent | None = None,
        tools_context: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Settle a ``side_effects=True`` call whose outcome is unknown (a crash stopped it
        in flight; the model got ``outcome_unknown``): with what really happened
        (``output=`` or ``error=``), or by running it once more (``rerun=True``, with
        ``agent=`` and its ``tools_context``; the same ``ctx.idempotency_key``). The outcome
        reaches the model as a ``late-answer`` notice at the session's next model call. A
        call is settled once (docs/guides/sessions.md, "Tools with side effects").

        Example::

            await executor.resolve_call("s1", "call_1", output={"charged": True})
            await executor.resolve_call("s1", "call_2", rerun=True, agent=agent)

        Returns:
            The call's result as the model will read it.

        Raises:
            InvalidRequestError: not exactly one of ``output``, ``error``, ``rerun``; an
                output that is not JSON; ``rerun`` without the agent's tool.
            SessionNotFoundError: no such session.
            CallNotFoundError: the session's ledger has no such call.
            CallNotInFlightError: the call has its result (its outcome is not unknown).
            CallAlreadySettledError: the call was settled already.
            ToolContextError: ``rerun`` without the tool's valid ``tools_context`` entry.
                (Every refusal writes nothing.)
        """
        return await resolve_call(
            self.store,
            session_id,
            tool_call_id,
            output=output,
            error=error,
            rerun=rerun,
            agent=agent,
            tools_context=tools_context,
        )


def _notice(row: CallRow, text: str) -> dict[str, Any]:
    """The late-answer notice that tells the model how a call reported unknown ended."""
    content = (
        f"The outcome of the call {row.tool_call_id} of the tool {row.tool_name!r}, reported "
        f"earlier as unknown, is now known: {capped(text)}"
    )
    (item,) = validate_items(
        [{"kind": "notice", "content": content}], forced_source=LATE_ANSWER_SOURCE
    )
    return item


async def _find(store: Store, session_id: str, tool_call_id: str) -> tuple[CallLedger, CallRow]:
    """The call's row, settleable now; every refusal before anything is written."""
    ledger = store.call_ledger
    if ledger is None:
        raise FrameworkNotSupportedError(
            "this store keeps no ledger of side-effect calls (its call_ledger is None)"
        )
    if await store.get_session(session_id) is None:
        raise SessionNotFoundError(f"no session {session_id!r}")
    row = next((r for r in await ledger.calls(session_id) if r.tool_call_id == tool_call_id), None)
    if row is None:
        raise CallNotFoundError(
            f"session {session_id!r} has no side-effect call {tool_call_id!r} (only calls of "
            "side_effects=True tools are in its ledger)"
        )
    if row.state in ("settled", "rerunning"):
        raise _settled(session_id, tool_call_id)
    if row.state != "unknown":
        raise CallNotInFlightError(
            f"call {tool_call_id!r} of session {session_id!r} is not waiting for its outcome "
            f"(it is {row.state!r}): only a call the model got outcome_unknown for can be "
            "resolved"
        )
    return ledger, row


def _given(output: Any, error: str | None, rerun: bool, agent: Agent | None) -> str:
    """Which settlement was asked for; refuses a call that asks for none or several."""
    asked = [
        name
        for name, given in (("output", output is not UNSET), ("error", error is not None))
        if given
    ] + (["rerun"] if rerun else [])
    if len(asked) != 1:
        raise InvalidRequestError(
            "resolve_call takes exactly one of output=..., error=... or rerun=True"
        )
    if asked == ["error"] and not isinstance(error, str):
        raise InvalidRequestError("resolve_call(error=...) takes the error's text (a str)")
    if asked == ["rerun"] and agent is None:
        raise InvalidRequestError(
            "resolve_call(rerun=True) needs agent=: the agent whose tool runs the call again"
        )
    if asked == ["output"]:
        try:
            json.dumps(output, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidRequestError(
                f"resolve_call(output=...) must be JSON-safe: {exc}"
            ) from None
    return asked[0]


async def resolve_call(
    store: Store,
    session_id: str,
    tool_call_id: str,
    *,
    output: Any = UNSET,
    error: str | None = None,
    rerun: bool = False,
    agent: Agent | None = None,
    tools_context: Mapping[str, Any] | None = None,
) -> ToolResult:
    """Settle a call whose outcome is unknown (see ``Executor.resolve_call``)."""
    how = _given(output, error, rerun, agent)
    ledger, row = await _find(store, session_id, tool_call_id)
    expect: CallState = "unknown"
    if how == "rerun":
        assert agent is not None
        tool, parsed, context = _prepared(agent, row, tools_context)
        # The compare-and-set lets one re-run start, however many are asked for at once.
        rerunning = {"resolved": "rerun"}
        if not await ledger.move(
            session_id, tool_call_id, expect="unknown", state="rerunning", result=rerunning
        ):
            raise _settled(session_id, tool_call_id)
        result, expect = await _rerun(tool, parsed, context, row), "rerunning"
        text = f"it was run again (with the same idempotency key): {_outcome(result)}"
    elif how == "output":
        result = ToolResult(
            tool_call_id=row.tool_call_id, tool_name=row.tool_name, status="output", output=output
        )
        text = _outcome(result)
    else:
        result = ToolResult(
            tool_call_id=row.tool_call_id, tool_name=row.tool_name, status="error", error=error
        )
        text = _outcome(result)
    try:
        # Keyed by the call: a second settlement with another outcome is refused by the key
        # (nothing written); the same one again (a retry after a crash) records nothing.
        await store.enqueue_context(
            session_id,
            [_notice(row, text)],
            source=LATE_ANSWER_SOURCE,
            origin={"type": LATE_ANSWER_SOURCE, "tool_call_id": tool_call_id},
            key=f"helix.resolve:{tool_call_id}",
            on_key_conflict="raise",
        )
    except ContextKeyConflictError:
        raise _settled(session_id, tool_call_id) from None
    settled = {"resolved": how, **result_json(result)}
    if not await ledger.move(
        session_id, tool_call_id, expect=expect, state="settled", result=settled
    ):
        raise _settled(session_id, tool_call_id)
    return result


def _outcome(result: ToolResult) -> str:
    if result.status == "output":
        return dump_output(result.output)
    return f"it failed: {result.error}"


def _settled(session_id: str, tool_call_id: str) -> CallAlreadySettledError:
    return CallAlreadySettledError(
        f"call {tool_call_id!r} of session {session_id!r} was settled already; a call is "
        "settled once"
    )


def _prepared(
    agent: Agent, row: CallRow, tools_context: Mapping[str, Any] | None
) -> tuple[Tool, Any, Any]:
    """The tool, its validated input and context for a re-run (refused before any write)."""
    tool = agent.tool_map.get(row.tool_name)
    if tool is None or tool.execute is None:
        raise InvalidRequestError(
            f"agent {agent.name!r} has no tool {row.tool_name!r} to run call "
            f"{row.tool_call_id!r} again"
        )
    try:
        parsed = tool.input_schema.model_validate(json.loads(row.arguments))
    except ValueError as exc:
        raise InvalidRequestError(
            f"call {row.tool_call_id!r}'s arguments no longer validate: {exc}"
        ) from None
    return tool, parsed, tool.resolve_context(tools_context)


async def _rerun(tool: Tool, parsed: Any, context: Any, row: CallRow) -> ToolResult:
    """Run the call once more, with its own idempotency key; a raise is its error result."""
    ctx: ToolContext[Any] = ToolContext(
        context=context,
        tool_call_id=row.tool_call_id,
        tool_name=tool.name,
        idempotency_key=row.idempotency_key,
    )
    try:
        output = await tool.run(parsed, ctx)
    except Exception as exc:
        text = redact(
            f"Tool {tool.name!r} failed: {type(exc).__name__}: {exc}", secret_strings(context, None)
        )
        return ToolResult(
            tool_call_id=row.tool_call_id, tool_name=row.tool_name, status="error", error=text
        )
    if hasattr(output, "model_dump"):
        output = output.model_dump(mode="json")
    return ToolResult(
        tool_call_id=row.tool_call_id, tool_name=row.tool_name, status="output", output=output
    )
