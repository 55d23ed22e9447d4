"""What a request shows of a log with summary rows (``epoch_records``), and where a
compaction's kept tail starts (``tail_start``)."""

from __future__ import annotations

from typing import Any

from helix_stream.context._summary import epoch_records, summary_payload, tail_start
from helix_stream.store import LogRecord


def log_of(*entries: tuple[str, dict[str, Any]]) -> list[LogRecord]:
    return [
        LogRecord(seq=i + 1, role=role, payload=payload, created_at=0.0)
        for i, (role, payload) in enumerate(entries)
    ]


def user(text: str) -> tuple[str, dict[str, Any]]:
    return "user", {"role": "user", "content": text}


def answer(text: str) -> tuple[str, dict[str, Any]]:
    return "assistant", {"role": "assistant", "content": text}


def row(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return "context", {"kind": kind, "source": "app", **fields}


def test_a_log_without_a_summary_is_shown_whole() -> None:
    log = log_of(user("a"), answer("b"), row("notice", content="n"))
    assert epoch_records(log) == log


def test_after_a_summary_the_rows_in_force_come_first_then_the_summary_and_the_tail() -> None:
    log = log_of(
        row("instruction", content="French"),  # 1: in force
        user("q1"),  # 2
        row("notice", content="upload done"),  # 3: summarized
        row("tools", disable=["x"]),  # 4: in force
        answer("a1"),  # 5
        user("q2"),  # 6: the tail
        answer("a2"),  # 7
        ("context", summary_payload("S1", keep_from=6, model="m")),  # 8
        user("q3"),  # 9
    )
    assert [r.seq for r in epoch_records(log)] == [1, 4, 8, 6, 7, 9]


def test_only_the_last_summary_is_shown() -> None:
    log = log_of(
        user("q1"),
        answer("a1"),
        user("q2"),
        ("context", summary_payload("S1", keep_from=3, model="m")),  # 4
        answer("a2"),
        user("q3"),  # 6
        ("context", summary_payload("S2", keep_from=6, model="m")),  # 7
        answer("a3"),
    )
    assert [r.seq for r in epoch_records(log)] == [7, 6, 8]
    # A rewind to before the second summary shows the first one's epoch again.
    assert [r.seq for r in epoch_records(log[:5])] == [4, 3, 5]


def test_the_tail_keeps_the_turn_in_progress_and_the_last_whole_turns() -> None:
    log = log_of(user("q1"), answer("a1"), user("q2"), answer("a2"), user("q3"))
    assert tail_start(log, 0) == 5
    assert tail_start(log, 1) == 3
    assert tail_start(log, 5) is None  # everything is kept: nothing to summarize


def test_nothing_new_before_the_tail_is_no_compaction() -> None:
    log = log_of(
        user("q1"),
        answer("a1"),
        user("q2"),  # 3
        ("context", summary_payload("S1", keep_from=3, model="m")),
        answer("a2"),
    )
    assert tail_start(log, 0) is None  # the summary covers all before q2 already
    more = [*log, LogRecord(seq=6, role="user", payload={"content": "q3"}, created_at=0.0)]
    assert tail_start(more, 0) == 6
