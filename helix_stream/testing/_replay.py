"""Re-run a stored session against its own answers, and report what changed.

This module owns :func:`replay`: the session's user turns are run again, in a fresh
:class:`~helix_stream.MemoryStore`, by the agent given (its tools, prompts and policies as
they are now) against a :class:`~._models.FunctionModel` that answers each model call with the
answer the session stored for it, turn by turn. Where the new run's text, tool calls or tool
results differ from the stored ones, a :class:`Difference` says which turn, which step and what.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..session._records import AssistantRecord, ToolRecord, UserRecord
from ._models import FunctionModel
from ._wire import Wire

if TYPE_CHECKING:
    from ..agent import Agent
    from ..session import Executor
    from ..store import LogRecord

__all__ = ["Difference", "ReplayReport", "replay"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Difference:
    """One place where the replayed run differs from the stored session.

    Attributes:
        turn: The user turn (0-based).
        step: The model call within the turn (0-based).
        what: ``"text"``, ``"tool_call"`` (a call's name or arguments), ``"tool_result"`` (what
            a call returned), ``"steps"`` (how many model calls the turn made) or ``"error"``
            (the replayed turn failed).
        expected: What the stored session has.
        actual: What the replay produced.

    Example::

        report = await replay(executor, "session-1", agent)
        for difference in report.differences:     # where the new run went elsewhere
            print(difference.turn, difference.step, difference.what, difference.expected,
                  difference.actual)
    """

    turn: int
    step: int
    what: Literal["text", "tool_call", "tool_result", "steps", "error"]
    expected: Any
    actual: Any

    def __str__(self) -> str:
        return (
            f"turn {self.turn}, step {self.step}: {self.what} differs: "
            f"expected {self.expected!r}, got {self.actual!r}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayReport:
    """What :func:`replay` found.

    Attributes:
        turns: User turns replayed.
        model: The model the replay ran against (``.requests``: what the agent sent).
        differences: Every difference, in order; empty when the run matches.

    Example::

        report = await replay(executor, "session-1", agent)
        assert report.ok, report.differences              # the agent still does what it did
        print(report.turns, len(report.model.requests))
    """

    turns: int
    model: FunctionModel
    differences: tuple[Difference, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """No difference."""
        return not self.differences

    def __str__(self) -> str:
        if self.ok:
            return f"replay: {self.turns} turn(s), no difference"
        return "\n".join(str(d) for d in self.differences)


@dataclass(frozen=True, slots=True)
class _Step:
    text: str
    calls: tuple[tuple[str, str, Any], ...]  # (id, name, arguments)
    results: Mapping[str, Any]  # call id -> the content the model was sent


@dataclass(frozen=True, slots=True)
class _Turn:
    message: Mapping[str, Any]
    steps: tuple[_Step, ...]


async def replay(
    executor: Executor, session_id: str, agent: Agent, *, wire: Wire = "openai"
) -> ReplayReport:
    """Re-run session ``session_id``'s user turns with ``agent`` against the session's own
    answers (a scripted model, turn by turn), and report where the new run's text, tool calls
    or tool results differ.

    An offline regression test of an agent: record a session once (against the real model),
    keep it, and replay it after each change to the agent's tools or prompts. The tools run
    for real; the model does not. A turn that waited for an approval or a client's answer is
    compared up to the wait.

    Args:
        executor: Where the session is stored (it is only read).
        session_id: The stored session.
        agent: The agent as it is now (its ``model`` is replaced by the script).
        wire: The wire format the scripted model speaks.

    Example::

        report = await replay(executor, "support-42", agent)
        assert report.ok, str(report)
    """
    stored = _turns(await executor.log(session_id))
    script = _TurnScript(stored)
    model = FunctionModel(script.reply, wire=wire)
    try:
        replayed = await _run(stored, dataclasses.replace(agent, model=model), session_id, script)
    finally:
        model.close()
    differences = [
        d
        for i, (old, new) in enumerate(zip(stored, replayed, strict=True))
        for d in _diff(i, old, new)
    ]
    return ReplayReport(turns=len(stored), model=model, differences=tuple(differences))


class _TurnScript:
    """The stored answers, turn by turn: each turn's calls get that turn's answers, so that a
    turn that now makes fewer or more calls leaves the next turns' answers where they were."""

    def __init__(self, stored: Sequence[_Turn]) -> None:
        self._stored = stored
        self._turn = 0
        self._step = 0

    def start(self, turn: int) -> None:
        self._turn, self._step = turn, 0

    def reply(self, request: dict[str, Any]) -> dict[str, Any]:
        steps = self._stored[self._turn].steps
        step, self._step = self._step, self._step + 1
        if step >= len(steps):
            raise LookupError(
                f"turn {self._turn} made model call {step + 1}; the session stored {len(steps)}"
            )
        return _reply(steps[step])


async def _run(
    stored: Sequence[_Turn], agent: Agent, session_id: str, script: _TurnScript
) -> list[tuple[tuple[_Step, ...], str | None]]:
    from ..session import Executor
    from ..store import MemoryStore

    executor = Executor(store=MemoryStore())
    sid = f"replay-{session_id}"[:128]
    out: list[tuple[tuple[_Step, ...], str | None]] = []
    for number, turn in enumerate(stored):
        script.start(number)
        before = len(await executor.log(sid)) if out else 0
        result = executor.run(agent, sid, dict(turn.message))
        await result.consume()
        error = result.error
        log = await executor.log(sid)
        steps = _turns(log[before:])[0].steps if log[before:] else ()
        out.append((steps, None if error is None else f"{type(error).__name__}: {error}"))
    return out


def _turns(log: Sequence[LogRecord]) -> list[_Turn]:
    """The log's user turns, each with its model calls (context rows left out)."""
    turns: list[tuple[Mapping[str, Any], list[_Step]]] = []
    for record in log:
        payload = record.payload
        if record.role == "user" and isinstance(payload, Mapping):
            turns.append((UserRecord.decode(payload).message, []))
        elif record.role == "assistant" and turns and isinstance(payload, Mapping):
            message = AssistantRecord.decode(payload).message
            calls = tuple(
                (c["id"], c["function"]["name"], _arguments(c["function"].get("arguments")))
                for c in message.get("tool_calls") or ()
            )
            turns[-1][1].append(_Step(str(message.get("content") or ""), calls, {}))
        elif record.role == "tool" and turns and turns[-1][1] and isinstance(payload, Mapping):
            message = ToolRecord.decode(payload).message
            last = turns[-1][1][-1]
            results = {**last.results, str(message.get("tool_call_id")): message.get("content")}
            turns[-1][1][-1] = dataclasses.replace(last, results=results)
    return [_Turn(message, tuple(steps)) for message, steps in turns]


def _arguments(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def _reply(step: _Step) -> dict[str, Any]:
    reply: dict[str, Any] = {"text": step.text}
    if step.calls:
        reply["tool_calls"] = [
            {"id": call_id, "name": name, "arguments": args if isinstance(args, dict) else {}}
            for call_id, name, args in step.calls
        ]
    return reply


def _diff(turn: int, old: _Turn, new: tuple[tuple[_Step, ...], str | None]) -> list[Difference]:
    steps, error = new
    out: list[Difference] = []
    if error is not None:
        out.append(
            Difference(turn=turn, step=len(steps), what="error", expected=None, actual=error)
        )
    for number, (a, b) in enumerate(zip(old.steps, steps, strict=False)):
        if a.text != b.text:
            out.append(
                Difference(turn=turn, step=number, what="text", expected=a.text, actual=b.text)
            )
        calls_a = [(n, args) for _, n, args in a.calls]
        calls_b = [(n, args) for _, n, args in b.calls]
        if calls_a != calls_b:
            out.append(
                Difference(
                    turn=turn, step=number, what="tool_call", expected=calls_a, actual=calls_b
                )
            )
        results_a = [a.results.get(i) for i, _, _ in a.calls]
        results_b = [b.results.get(i) for i, _, _ in b.calls]
        if calls_a == calls_b and results_a != results_b:
            out.append(
                Difference(
                    turn=turn, step=number, what="tool_result", expected=results_a, actual=results_b
                )
            )
    if len(old.steps) != len(steps):
        out.append(
            Difference(
                turn=turn,
                step=min(len(old.steps), len(steps)),
                what="steps",
                expected=len(old.steps),
                actual=len(steps),
            )
        )
    return out
