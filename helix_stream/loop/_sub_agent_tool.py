"""An agent as a tool (``Agent.as_tool``): each call runs the agent's turn in a child session.

The child session's id is ``"<parent session>/<tool call id>"``; the executor that runs the
parent's turn runs the child's (the session scope's ``run_child``). The call's result is the
child's structured answer (as JSON) or its text. With ``stream_progress`` the child's chunks
are read as they come and relayed as preliminary output of the call
(``_sub_agent_progress.py``); the result stays the same.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..state import ParentInfo, SubAgent, current_scope
from ..tools import Tool
from ._sub_agent_progress import relay_progress

__all__ = ["SubAgentInput", "sub_agent_tool"]


# The input of a sub-agent's tool: the prompt its turn answers. No docstring: it would become
# the schema's description, and the tool's schema must stay the bytes it always was.
class SubAgentInput(BaseModel):
    prompt: str


def sub_agent_tool(
    agent: SubAgent, name: str | None, description: str | None, *, stream_progress: bool
) -> Tool:
    """``agent`` as a tool named ``name`` (default: the agent's name)."""

    async def run(input: SubAgentInput, ctx: Any) -> Any:
        scope = current_scope(f"sub-agent {agent.name!r}")
        parent = scope.info
        root = parent.parent.root_session_id if parent.parent else parent.id
        result = scope.run_child(
            agent,
            f"{parent.id}/{ctx.tool_call_id}",
            input.prompt,
            auth=parent.auth.current,
            parent=ParentInfo(
                call_id=ctx.tool_call_id,
                session_id=parent.id,
                root_session_id=root,
                turn=parent.turn,
            ),
        )
        if stream_progress and ctx.writer is not None:
            await relay_progress(result, ctx.tool_call_id, ctx.writer)
        text = await result.text()
        output = result.output
        if isinstance(output, BaseModel):  # a tool's output is JSON in the log
            return output.model_dump(mode="json")
        return output if output is not None else text

    return Tool(
        name=name or agent.name,
        description=description or f"Ask the {agent.name} agent; give it a prompt.",
        input_schema=SubAgentInput,
        execute=run,
    )
