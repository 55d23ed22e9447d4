"""Tool results have a size limit (``max_tool_result_bytes``, ``hs.tool(max_result_bytes=...)``):
the model reads a larger result cut, with a notice; the app keeps all of it; a wrong limit is
refused before anything is sent or written. Through a loopback OpenAI server (the bytes it
received) and ``hs.Executor`` on SQLite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import helix_stream as hs
from helix_stream._result_size import cut_content, notice
from helix_stream.chunks import ToolOutputAvailable, ToolOutputError
from tests.loopback import LoopbackServer, text, tool_calls

BIG = {"rows": [{"id": i, "name": "ü" * 40} for i in range(3000)]}  # about 290 KB as JSON
BIG_BYTES = len(json.dumps(BIG, ensure_ascii=False).encode())


@hs.tool
def report(query: str) -> dict[str, Any]:
    """A report far over the limit."""
    return BIG


@hs.tool(max_result_bytes=1_000)
def short_report(query: str) -> dict[str, Any]:
    """A report its tool cuts to 1,000 bytes."""
    return BIG


def tool_message(loopback: LoopbackServer, request: int = 1) -> str:
    (message,) = [m for m in loopback.bodies()[request]["messages"] if m["role"] == "tool"]
    return str(message["content"])


def test_a_text_result_is_cut_on_a_character_boundary_with_the_notice() -> None:
    cut = cut_content("é" * 10, 5)  # 20 bytes; 5 would split the third character
    assert cut.content == "éé" + notice(20, 16, 5) and cut.cut_bytes == 16
    assert cut_content("short", 5) == type(cut)(content="short")
    assert cut_content("x" * 10**6, None).cut_bytes == 0


def test_content_parts_keep_what_fits_and_leave_out_an_image_over_the_limit() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 500}}
    small = {"type": "image_url", "image_url": {"url": "data:,x"}}
    cut = cut_content([{"type": "text", "text": "abc"}, small, image], 100)
    assert isinstance(cut.content, list)
    assert cut.content[:3] == [
        {"type": "text", "text": "abc"},
        small,
        {"type": "text", "text": "[an image over the size limit, left out]"},
    ]
    assert cut.cut_bytes == len(image["image_url"]["url"])  # type: ignore[index]
    assert "The full result is available to the application" in cut.content[3]["text"]


async def test_the_model_reads_the_cut_result_and_the_app_gets_all_of_it(
    loopback: LoopbackServer,
) -> None:
    loopback.script(tool_calls(("report", {"query": "all"})), text("done"))
    ended: list[Any] = []
    result = hs.stream_text(
        **loopback.llm(), prompt="go", tools=[report], max_tool_result_bytes=10_000,
        on_tool_call_end=ended.append,
    )  # fmt: skip
    chunks = [chunk async for chunk in result.to_ui_message_stream()]
    assert await result.text() == "done"
    sent = tool_message(loopback)
    kept, _, rest = sent.partition("\n\n[")
    assert len(kept.encode()) <= 10_000 and len(kept.encode()) > 10_000 - 4
    assert json.dumps(BIG, ensure_ascii=False).startswith(kept)
    assert rest.startswith(f"The tool's result was {BIG_BYTES:,} bytes")
    (step, _) = await result.steps()
    (full,) = step.tool_results
    assert full.output == BIG and full.cut_bytes == BIG_BYTES - len(kept.encode())
    assert ended[0].result.output == BIG
    # The page shows what the model read (what a reload of a session shows).
    (shown,) = [c["output"] for c in chunks if c["type"] == "tool-output-available"]
    assert shown == sent


async def test_a_tools_own_limit_wins_and_none_means_no_limit(loopback: LoopbackServer) -> None:
    loopback.script(tool_calls(("short_report", {"query": "x"})), text("done"))
    await hs.generate_text(**loopback.llm(), prompt="go", tools=[short_report])
    assert len(tool_message(loopback).partition("\n\n[")[0].encode()) <= 1_000
    loopback.reset()
    loopback.script(tool_calls(("report", {"query": "x"})), text("done"))
    await hs.generate_text(**loopback.llm(), prompt="go", tools=[report])  # the default
    assert len(tool_message(loopback).partition("\n\n[")[0].encode()) <= 100_000
    loopback.reset()
    loopback.script(tool_calls(("report", {"query": "x"})), text("done"))
    await hs.generate_text(
        **loopback.llm(), prompt="go", tools=[report], max_tool_result_bytes=None
    )
    assert json.loads(tool_message(loopback)) == BIG


async def test_an_agents_limit_holds_for_its_turns_and_the_cut_is_stable(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    agent = hs.Agent(
        name="a", tools=[report], max_tool_result_bytes=5_000, **loopback_agent(loopback)
    )
    executor = hs.Executor(store=hs.SQLiteStore(str(tmp_path / "s.db")))
    loopback.script(tool_calls(("report", {"query": "x"})), text("one"), text("two"))
    assert await executor.run(agent, "s", "first").text() == "one"
    assert await executor.run(agent, "s", "second").text() == "two"
    first, second = loopback.requests[1], loopback.requests[2]
    end = first.index(b"}", first.index(b"in this conversation.]")) + 1
    assert second[:end] == first[:end]  # the cut tool message, byte for byte
    assert len(tool_message(loopback).partition("\n\n[")[0].encode()) <= 5_000
    await executor.store.close()


def loopback_agent(loopback: LoopbackServer) -> dict[str, Any]:
    return {"model": "openai/loopback", "settings": {"api_base": loopback.api_base, "api_key": "k"}}


@pytest.mark.parametrize("wrong", [0, -1, 1.5, "100", True])
async def test_a_wrong_limit_is_refused_before_anything_is_sent_or_written(
    wrong: Any, loopback: LoopbackServer, tmp_path: Path
) -> None:
    with pytest.raises(hs.InvalidRequestError, match="max_tool_result_bytes"):
        hs.Agent(name="a", model="helix/demo", max_tool_result_bytes=wrong)
    with pytest.raises(hs.InvalidRequestError, match="max_result_bytes"):
        hs.tool(name="t", input_schema=hs.ContextItem, max_result_bytes=wrong)
    with pytest.raises(hs.InvalidRequestError, match="max_tool_result_bytes"):
        await hs.generate_text(**loopback.llm(), prompt="go", max_tool_result_bytes=wrong)
    assert loopback.requests == []
    store = hs.SQLiteStore(str(tmp_path / "s.db"))
    executor = hs.Executor(store=store)
    agent = hs.Agent(name="a", **loopback_agent(loopback))
    with pytest.raises(hs.InvalidRequestError, match="max_tool_result_bytes"):
        await executor.run(agent, "s", "hi", max_tool_result_bytes=wrong).text()
    assert await store.get_session("s") is None and loopback.requests == []
    await store.close()


@hs.tool
def explode(query: str) -> str:
    """Fails with a huge message."""
    raise RuntimeError("e" * 50_000)


async def test_a_huge_error_is_cut_too(loopback: LoopbackServer) -> None:
    loopback.script(tool_calls(("explode", {"query": "x"})), text("sorry"))
    result = hs.stream_text(
        **loopback.llm(), prompt="go", tools=[explode], max_tool_result_bytes=2_000
    )
    chunks = [chunk async for chunk in result]
    sent = tool_message(loopback)
    assert len(sent.partition("\n\n[")[0].encode()) == 2_000 and "were cut here" in sent
    # The chunk (what a page shows with errors unmasked) carries the model's text.
    (error,) = [c.error_text for c in chunks if isinstance(c, ToolOutputError)]
    assert error == sent
    (step, _) = await result.steps()
    assert step.tool_results[0].error is not None and len(step.tool_results[0].error) > 50_000


async def test_a_runs_limit_goes_over_the_agents(loopback: LoopbackServer) -> None:
    agent = hs.Agent(
        name="a", tools=[report], max_tool_result_bytes=5_000, **loopback_agent(loopback)
    )
    executor = hs.Executor(store=hs.MemoryStore())
    loopback.script(tool_calls(("report", {"query": "x"})), text("one"))
    await executor.run(agent, "s", "first", max_tool_result_bytes=700).text()
    assert len(tool_message(loopback).partition("\n\n[")[0].encode()) <= 700


async def test_a_client_tools_answer_over_the_limit_is_cut_when_the_turn_resumes(
    loopback: LoopbackServer,
) -> None:
    ask = hs.tool(name="ask_user", input_schema=hs.ContextItem)  # no execute: a client tool
    agent = hs.Agent(name="a", tools=[ask], max_tool_result_bytes=1_000, **loopback_agent(loopback))
    executor = hs.Executor(store=hs.MemoryStore())
    loopback.script(tool_calls(("ask_user", {"kind": "notice", "content": "?"})))
    await executor.run(agent, "s", "go").text()
    await executor.submit_tool_result("s", "call_0_ask_user", {"answer": "y" * 20_000})
    loopback.script(text("thanks"))
    chunks = [chunk async for chunk in executor.run(agent, "s", None)]
    sent = tool_message(loopback)
    assert len(sent.partition("\n\n[")[0].encode()) == 1_000 and "were cut here" in sent
    (shown,) = [c.output for c in chunks if isinstance(c, ToolOutputAvailable)]
    assert shown == sent
    (stored,) = [m for m in await executor.ui_messages("s") if m["role"] == "assistant"]
    assert [p.get("output") for p in stored["parts"] if "output" in p] == [sent]
