"""A session driven the way the executor drives one, for a given provider family.

The log holds messages and context rows (``LogRecord``); before every model call a small pass
(the first ``prepare_step``) commits the queued rows and hands the loop the whole log rendered
with :func:`helix_stream.context.render_record` for the family — what the executor's context
pass does, with the family passed in. The request then goes through the real loop
(``stream_text``, which adds the cache breakpoints), litellm and real HTTP to a loopback
server of that provider's wire format.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import helix_stream as hs
from helix_stream.context import render_record
from helix_stream.models._family import Family
from helix_stream.prepare_step import StepInput
from helix_stream.store import LogRecord


def row(kind: str, source: str, content: str) -> dict[str, Any]:
    """A context row payload (as the store keeps it)."""
    return {"kind": kind, "source": source, "content": content, "origin": {"type": "test"}}


@dataclass
class RowSession:
    """One session: its log, its queue of rows, and how its requests are sent."""

    llm: dict[str, Any]
    family: Family
    system: str
    tools: Sequence[hs.Tool] = ()
    prompt_cache: Any = None  # None: the default; else passed as stream_text(prompt_cache=...)
    prepare_step: Sequence[Any] = ()
    log: list[LogRecord] = field(default_factory=list)
    queue: list[dict[str, Any]] = field(default_factory=list)
    # The rendered text of the rows committed before each model call, in log order.
    rows_sent: list[list[str]] = field(default_factory=list)
    # The messages handed to the loop for each model call (before the system prompt is added).
    messages_sent: list[list[dict[str, Any]]] = field(default_factory=list)

    def add_context(self, *payloads: dict[str, Any]) -> None:
        """Queue rows; they are committed before the next model call."""
        self.queue.extend(payloads)

    def _append(self, role: str, payload: dict[str, Any]) -> None:
        seq = len(self.log) + 1
        self.log.append(LogRecord(seq=seq, role=role, payload=payload, created_at=time.time()))

    def _take_step(self, step: Any) -> None:
        for message in step.response_messages:
            self._append(message["role"], message)

    def _pass(self, step: StepInput) -> dict[str, Any]:
        if step.step_number > 0:
            self._take_step(step.steps[-1])
        for payload in self.queue:
            self._append("context", payload)
        self.queue.clear()
        rendered = [render_record(r, self.family) for r in self.log]
        self.messages_sent.append(rendered)
        self.rows_sent.append(
            [m["content"] for r, m in zip(self.log, rendered, strict=True) if r.role == "context"]
        )
        return {"messages": rendered}

    async def turn(self, text: str) -> hs.StreamTextResult:
        """Run one user turn to its end."""
        self._append("user", {"role": "user", "content": text})
        extra = {} if self.prompt_cache is None else {"prompt_cache": self.prompt_cache}
        result = hs.stream_text(
            **self.llm,
            system=self.system,
            messages=[],
            tools=list(self.tools),
            prepare_step=[self._pass, *self.prepare_step],
            **extra,
        )
        steps = await result.steps()  # raises the run's error, if any
        self._take_step(steps[-1])
        return result
