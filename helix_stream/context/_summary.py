"""Summary rows (kind ``summary``) and how a log that holds one is shown to the model.

A compaction (README, "Compaction that appends"; ``docs/guides/prompt-caching.md``) never
rewrites the log: it **appends** a context row of kind ``summary`` whose content summarizes
everything before the kept tail, and whose ``keep_from`` is the seq of the tail's first record.
That row starts a new *epoch*. From then on a request shows, after the system prompt and the
tools:

1. the rows still in force from before the tail, in log order: instructions, tool switches
   and recalled memories (notices, late answers and older summaries are what the summary is
   for);
2. the summary row;
3. the tail, and everything appended since, in log order (an older summary row left out).

Every later record is appended after these, so each request of an epoch is a byte prefix of
the next. A rewind or a branch to a point before the summary row drops it with the rest, and
the whole history is shown again. The tool gate and the step_context cursor are folded from
the whole log (:class:`~helix_stream.context.LogFold`), summary or not.

This module owns that rule (:func:`epoch_records`), the row's payload
(:func:`summary_payload`) and the summarizing instruction the summarizer call ends with
(:func:`summarizer_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..store import LogRecord

__all__ = [
    "COMPACTION_SOURCE",
    "DEFAULT_SUMMARY_INSTRUCTIONS",
    "IN_FORCE_KINDS",
    "SUMMARY_KIND",
    "epoch_records",
    "is_summary",
    "summarizer_row",
    "summary_payload",
    "tail_start",
]

SUMMARY_KIND = "summary"
# Not an operator source: a summary is the model's own text about the conversation (user text
# and tool results included), so it renders as a user message on every family, never with the
# authority of an app row.
COMPACTION_SOURCE = "compaction"
IN_FORCE_KINDS = frozenset({"instruction", "tools", "memory"})

DEFAULT_SUMMARY_INSTRUCTIONS = (
    "The conversation so far is about to be compacted. Write a summary of it that lets you "
    "carry on without the earlier messages: the user's goals and requests, decisions made, "
    "facts and figures found by tools (with ids, names and numbers), open questions and what "
    "you were about to do. The latest {kept} will stay verbatim after your summary: summarize "
    "what came before them. Do not call any tool; answer with the summary only."
)


def is_summary(record: LogRecord) -> bool:
    """Whether ``record`` is a summary row."""
    return record.role == "context" and record.payload.get("kind") == SUMMARY_KIND


def _in_force(record: LogRecord) -> bool:
    return record.role == "context" and record.payload.get("kind") in IN_FORCE_KINDS


def epoch_records(log: Sequence[LogRecord]) -> list[LogRecord]:
    """The records a request shows, in the order it shows them (module docstring): the whole
    log when it holds no summary row; else the rows in force before the last summary's tail,
    that summary, then the tail and what follows."""
    last = next((i for i in range(len(log) - 1, -1, -1) if is_summary(log[i])), None)
    if last is None:
        return list(log)
    summary = log[last]
    keep_from = int(summary.payload.get("keep_from", summary.seq))
    head = [r for r in log[:last] if r.seq < keep_from and _in_force(r)]
    tail = [r for r in log if r.seq >= keep_from and not is_summary(r)]
    return [*head, summary, *tail]


def summary_payload(text: str, *, keep_from: int, model: str) -> dict[str, Any]:
    """The payload of a summary row: ``text`` summarizes everything before seq
    ``keep_from``; ``model`` wrote it."""
    return {
        "kind": SUMMARY_KIND,
        "source": COMPACTION_SOURCE,
        "content": text,
        "keep_from": keep_from,
        "origin": {"type": "compaction", "model": model},
    }


def summarizer_row(instructions: str | None, kept_turns: int) -> dict[str, Any]:
    """The row the summarizer call ends with (never stored): ``instructions`` or the
    default, told how many turns stay verbatim."""
    kept = "turn (the one in progress)" if kept_turns <= 1 else f"{kept_turns} turns"
    text = instructions if instructions is not None else DEFAULT_SUMMARY_INSTRUCTIONS
    return {
        "kind": "instruction",
        "source": COMPACTION_SOURCE,
        "content": text.replace("{kept}", kept),
    }


def tail_start(log: Sequence[LogRecord], keep_last_turns: int) -> int | None:
    """The seq the kept tail starts at: the user message that opened the ``keep_last_turns``-th
    latest turn before the one in progress (that one is always kept), or ``None`` when there
    is nothing before it to summarize that the last summary did not already cover."""
    users = [r.seq for r in log if r.role == "user"]
    if not users:
        return None
    keep_from = users[-1 - min(keep_last_turns, len(users) - 1)]
    covered = max(
        (int(r.payload.get("keep_from", r.seq)) for r in log if is_summary(r)), default=None
    )
    before = [r for r in log if r.seq < keep_from and not is_summary(r)]
    if covered is not None:
        before = [r for r in before if r.seq >= covered]
    if not any(r.role != "context" for r in before):
        return None
    return keep_from
