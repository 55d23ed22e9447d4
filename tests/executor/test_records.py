"""Stored records are typed, and the bytes stores already hold stay what they mean.

The payloads below are written as the package has always stored them (the ``_`` keys of
``helix_stream/session/_records.py``): they decode to typed records, encode back to the same
JSON bytes, are never sent to the model, and a session holding them reads and continues.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.chunks import DataChunk, SourceUrl
from helix_stream.context import model_message
from helix_stream.session._records import KEYS, AssistantRecord, ToolRecord, UserRecord
from helix_stream.store import NewSession, TurnWrite
from tests.loopback import LoopbackServer, text

_CALLS = [
    {"id": "c1", "type": "function", "function": {"name": "deploy", "arguments": '{"q": "x"}'}},
    {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "y"}'}},
]
USER = {"role": "user", "content": "Show me", "_message_id": "u1"}
USER_FILES = {
    "role": "user",
    "content": [{"type": "text", "text": "and this"}],
    "_message_id": "u2",
    "_parts": [{"type": "text", "text": "and this"}],
}
STEP = {
    "role": "assistant",
    "content": "See this",
    "tool_calls": _CALLS,
    "_message_id": "m1",
    "_awaiting_approval": ["c1"],
    "_data": [{"name": "progress", "id": "p1", "data": {"done": 1}}],
    "_sources": [{"sourceId": "source-0-1", "url": "https://a.example/", "title": "A"}],
}
DENIED = {
    "role": "tool",
    "tool_call_id": "c2",
    "content": '{"status": "denied", "reason": "no"}',
    "_status": "denied",
}
CUT = {"role": "assistant", "content": "Once upon", "_message_id": "m2", "_interrupted": True}
LOG = [USER, STEP, DENIED, USER_FILES, CUT]


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        pytest.param(UserRecord, USER, id="user"),
        pytest.param(UserRecord, USER_FILES, id="user with parts"),
        pytest.param(AssistantRecord, STEP, id="a step"),
        pytest.param(AssistantRecord, CUT, id="a step cut short"),
        pytest.param(ToolRecord, DENIED, id="tool"),
    ],
)
def test_a_stored_payload_decodes_and_encodes_to_the_same_bytes(
    kind: Any, payload: dict[str, Any]
) -> None:
    record = kind.decode(payload)
    assert json.dumps(record.encode()) == json.dumps(payload)
    assert not any(key.startswith("_") for key in record.message)


def test_the_records_are_typed() -> None:
    step = AssistantRecord.decode(STEP)
    assert step.message_id == "m1" and step.awaiting_approval == ("c1",)
    assert step.data == (DataChunk(name="progress", data={"done": 1}, id="p1"),)
    assert step.sources == (SourceUrl(source_id="source-0-1", url="https://a.example/", title="A"),)
    assert AssistantRecord.decode(CUT).interrupted and not step.interrupted
    assert ToolRecord.decode(DENIED).status == "denied"
    assert (
        ToolRecord.decode({"role": "tool", "tool_call_id": "c", "content": "x"}).status == "output"
    )
    assert UserRecord.decode(USER_FILES).parts == USER_FILES["_parts"]


def test_no_bookkeeping_key_reaches_the_model() -> None:
    assert all(key.startswith("_") for key in KEYS)
    for payload in LOG:
        sent = model_message(payload)
        assert set(sent) == {k for k in payload if not k.startswith("_")}


async def test_a_session_stored_in_the_old_form_reads_and_continues(
    loopback: LoopbackServer,
) -> None:
    store = hs.MemoryStore()
    await store.write_turn("s", TurnWrite(create=NewSession(agent_name="a"), messages=LOG))
    executor = hs.Executor(store=store)
    messages = await executor.ui_messages("s", send_sources=True)
    assert [(m["id"], m["role"]) for m in messages] == [
        ("u1", "user"),
        ("m1", "assistant"),
        ("u2", "user"),
        ("m2", "assistant"),
    ]
    parts = messages[1]["parts"]
    assert [p["type"] for p in parts] == [
        "step-start",
        "source-url",
        "text",
        "tool-deploy",
        "tool-lookup",
        "data-progress",
    ]
    assert parts[3]["state"] == "approval-requested" and parts[4]["state"] == "output-denied"
    assert messages[3]["metadata"] == {"interrupted": True}
    # A new turn continues the session: the model gets the messages without the bookkeeping.
    llm = loopback.llm()
    agent = hs.Agent(name="a", model=llm.pop("model"), settings=llm)
    loopback.script(text("more"))
    assert await executor.run(agent, "s", "go on").text() == "more"
    sent = loopback.bodies()[0]["messages"]
    assert sent[:3] == [
        {"role": "user", "content": "Show me"},
        {"role": "assistant", "content": "See this", "tool_calls": _CALLS},
        {"role": "tool", "tool_call_id": "c2", "content": DENIED["content"]},
    ]
    assert not any(key.startswith("_") for message in sent for key in message)
