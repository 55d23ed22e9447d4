"""A lead agent with a sub-agent tool, and a loopback script for one turn of it (the sub-agent
progress tests of the loop, the server, the conformance harness and the browser share it)."""

from __future__ import annotations

from pydantic import BaseModel

import helix_stream as hs
from tests.loopback import LoopbackServer, text, tool_calls

__all__ = ["FINAL_OUTPUT", "LAST_PROGRESS", "lead_agent", "script_turn"]

FINAL_OUTPUT = "It is y."
"""The sub-agent's answer: the call's result, as without progress."""

LAST_PROGRESS = {
    "text": "Let me look.\n\nIt is y.",
    "toolCalls": [
        {
            "toolCallId": "call_inner",
            "toolName": "inner",
            "input": {"q": "y"},
            "state": "output-available",
        }
    ],
}
"""The last preliminary output of the sub-agent's call."""


class Q(BaseModel):
    q: str


def _inner(input: Q) -> str:
    return f"found {input.q}"


def _agent(loopback: LoopbackServer, name: str, tools: list[hs.Tool]) -> hs.Agent:
    return hs.Agent(
        name=name,
        system=f"You are {name}.",
        model="openai/loopback",
        tools=tools,
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
    )


def lead_agent(loopback: LoopbackServer, *, progress: bool) -> hs.Agent:
    """``lead``, whose tool ``ask`` runs the sub-agent ``researcher`` (tool ``inner``)."""
    child = _agent(loopback, "researcher", [hs.tool(name="inner", input_schema=Q, execute=_inner)])
    return _agent(loopback, "lead", [child.as_tool(name="ask", stream_progress=progress)])


def script_turn(loopback: LoopbackServer, *, delay: float = 0.0) -> None:
    """One turn: the lead calls ``ask``; the researcher writes, calls ``inner``, answers; the
    lead answers. ``delay``: seconds between the deltas of the researcher's replies."""
    first = text("Let me look.", pieces=4, delay=delay)
    first.deltas += tool_calls(("inner", {"q": "y"}), call_ids=["call_inner"]).deltas
    first.finish_reason = "tool_calls"
    loopback.script(
        tool_calls(("ask", {"prompt": "look it up"}), call_ids=["call_child"]),
        first,
        text(FINAL_OUTPUT, pieces=4, delay=delay),
        text("The child says y."),
    )
