"""A sub-agent's progress (``agent.as_tool(stream_progress=True)``): the chunks of the run, the
parent model's requests, the stored log, the UI stream per client major, and the throttle."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.chunks import ToolOutputAvailable, ToolOutputPreliminary
from helix_stream.loop._sub_agent_progress import ChildProgress, relay_progress
from tests._sub_agents import FINAL_OUTPUT, LAST_PROGRESS, lead_agent, script_turn
from tests.loopback import LoopbackServer


async def _run(executor: hs.Executor, loopback: LoopbackServer, session: str, progress: bool):
    loopback.reset()
    script_turn(loopback)
    result = executor.run(lead_agent(loopback, progress=progress), session, "go")
    chunks = [chunk async for chunk in result]
    return result, chunks


async def test_the_child_s_progress_streams_before_the_call_s_final_output(
    loopback: LoopbackServer,
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    result, chunks = await _run(executor, loopback, "s-progress", True)
    assert await result.text() == "The child says y."
    child = [c for c in chunks if getattr(c, "tool_call_id", None) == "call_child"]
    preliminary = [c.output for c in child if isinstance(c, ToolOutputPreliminary)]
    final = [c for c in child if isinstance(c, ToolOutputAvailable)]
    assert final == [ToolOutputAvailable(tool_call_id="call_child", output=FINAL_OUTPUT)]
    assert child[-1] == final[0]  # the final output comes last
    assert preliminary[-1] == LAST_PROGRESS
    # Each value is the whole progress so far: the text only grows, the calls only advance.
    texts = [p["text"] for p in preliminary]
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
    states = [[c["state"] for c in p["toolCalls"]] for p in preliminary]
    assert ["input-available"] in states and ["output-available"] in states
    assert states.index(["input-available"]) < states.index(["output-available"])
    # The stored log has the final output only; a reload shows it.
    log = await executor.log("s-progress")
    assert [r.payload["content"] for r in log if r.role == "tool"] == [FINAL_OUTPUT]
    assert "toolCalls" not in repr(log)
    [_, answer] = await executor.ui_messages("s-progress")
    [part] = [p for p in answer["parts"] if p.get("toolCallId") == "call_child"]
    assert (part["state"], part["output"], "preliminary" in part) == (
        "output-available",
        FINAL_OUTPUT,
        False,
    )


async def test_the_parent_model_sees_the_same_bytes_with_and_without_progress(
    loopback: LoopbackServer,
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    await _run(executor, loopback, "same", False)
    without = list(loopback.requests)
    await _run(executor, loopback, "same-2", True)
    with_progress = list(loopback.requests)
    assert len(without) == len(with_progress) == 4
    # Requests 0 and 3 are the parent's; 1 and 2 the child's (its session is another).
    assert with_progress[3] == without[3]
    assert b"toolCalls" not in with_progress[3] and FINAL_OUTPUT.encode() in with_progress[3]


async def test_without_stream_progress_no_progress_is_written(loopback: LoopbackServer) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    _, chunks = await _run(executor, loopback, "off", False)
    assert not [c for c in chunks if isinstance(c, ToolOutputPreliminary)]


def _ui_preliminary(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in out if c.get("preliminary")]


@pytest.mark.parametrize("version", [6, 7], ids=["ai@6", "ai@7"])
async def test_the_ui_stream_sends_preliminary_outputs_then_the_final(
    loopback: LoopbackServer, version: int
) -> None:
    executor = hs.Executor(store=hs.MemoryStore())
    loopback.reset()
    script_turn(loopback)
    result = executor.run(lead_agent(loopback, progress=True), f"ui-{version}", "go")
    out = [c async for c in result.to_ui_message_stream(client_version=version)]
    preliminary = _ui_preliminary(out)
    assert preliminary and all(
        set(c) == {"type", "toolCallId", "output", "preliminary"}
        and c["type"] == "tool-output-available"
        and c["toolCallId"] == "call_child"
        and c["preliminary"] is True
        for c in preliminary
    )
    assert preliminary[-1]["output"] == LAST_PROGRESS
    outputs = [c for c in out if c.get("toolCallId") == "call_child" and "output" in c]
    assert outputs[-1] == {
        "type": "tool-output-available",
        "toolCallId": "call_child",
        "output": FINAL_OUTPUT,
    }
    # The tool part was announced before its first preliminary output.
    kinds = [(c["type"], c.get("preliminary")) for c in out if c.get("toolCallId") == "call_child"]
    assert kinds[0][0] in {"tool-input-start", "tool-input-available"}


async def test_an_ai5_client_gets_no_preliminary_outputs(loopback: LoopbackServer) -> None:
    # ai@5.0.0's chunk schema is strict: a `preliminary` key fails its whole stream.
    executor = hs.Executor(store=hs.MemoryStore())
    loopback.reset()
    script_turn(loopback)
    result = executor.run(lead_agent(loopback, progress=True), "ui-5", "go")
    out = [c async for c in result.to_ui_message_stream(client_version=5)]
    assert not _ui_preliminary(out)
    assert {
        "type": "tool-output-available",
        "toolCallId": "call_child",
        "output": FINAL_OUTPUT,
    } in out


# -- the fold and the throttle, on their own ----------------------------------------------------


def test_the_fold_keeps_text_parts_and_call_states_in_order() -> None:
    from helix_stream.chunks import (
        FinishStep,
        TextDelta,
        TextEnd,
        TextStart,
        ToolInputAvailable,
        ToolInputStart,
        ToolOutputError,
    )

    fold = ChildProgress()
    seen = [
        fold.see(TextStart(id="t")),
        fold.see(TextDelta(id="t", delta="Hi")),
        fold.see(TextEnd(id="t")),
        fold.see(ToolInputStart(tool_call_id="c", tool_name="f")),
        fold.see(ToolInputAvailable(tool_call_id="c", tool_name="f", input={"a": 1})),
        fold.see(ToolOutputError(tool_call_id="c", error_text="boom")),
        fold.see(FinishStep(step_number=0, finish_reason="tool-calls")),
        fold.see(TextStart(id="t")),  # the next step reuses the id: a new part
        fold.see(TextDelta(id="t", delta="Done")),
    ]
    assert seen == [None, "text", "flush", "now", "now", "now", "flush", None, "text"]
    first = fold.value()
    assert first == {
        "text": "Hi\n\nDone",
        "toolCalls": [
            {"toolCallId": "c", "toolName": "f", "input": {"a": 1}, "state": "output-error"}
        ],
    }
    fold.see(TextDelta(id="t", delta="!"))
    assert first["text"] == "Hi\n\nDone"  # a value already handed out never changes


async def test_streaming_text_is_sent_at_most_once_per_interval_and_flushed_at_its_end() -> None:
    from helix_stream.chunks import TextDelta, TextEnd, TextStart

    now = [0.0]

    async def chunks():  # type: ignore[no-untyped-def]
        yield TextStart(id="t")
        for letter in "abcde":
            yield TextDelta(id="t", delta=letter)
            now[0] += 0.02  # a delta every 0.02 s
        yield TextEnd(id="t")

    sent: list[ToolOutputPreliminary] = []
    await relay_progress(chunks(), "c", sent.append, interval=0.05, clock=lambda: now[0])
    # "a" at t=0 (the first), "abcd" at t=0.06 (the interval passed), "abcde" at the end.
    assert [s.output["text"] for s in sent] == ["a", "abcd", "abcde"]
    assert {s.tool_call_id for s in sent} == {"c"}
