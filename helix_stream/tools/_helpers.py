"""What the loop does with an agent's tools: normalize ``tools=`` by name, resolve each tool's
context, dump a result as the tool message's content, the ``__finish__`` tool of a structured
answer, and a call's approval id."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from ._tool import Tool

FINISH_TOOL_NAME = "__finish__"


def approval_id(tool_call_id: str) -> str:
    """The approval id of a call (what ``tool-approval-request`` announces and answers name).

    Example::

        assert approval_id("call_1") == "approval-call_1"
        await executor.respond_to_approval("session-1", approval_id("call_1"), approved=True)
    """
    return f"approval-{tool_call_id}"


def finish_tool(schema: type[BaseModel]) -> Tool:
    """The ``__finish__`` tool of a structured answer: its input is the answer (``schema``);
    its output is the answer as JSON (what the log keeps; the loop returns the instance).

    Example::

        from pydantic import BaseModel

        class City(BaseModel):
            name: str

        finish = finish_tool(City)                 # what output=City offers the model
        assert finish.name == "__finish__"
    """
    return Tool(
        name=FINISH_TOOL_NAME,
        description="Call this once, with the final answer, to finish.",
        input_schema=schema,
        execute=lambda output, ctx: output.model_dump(mode="json"),
    )


def tools_by_name(tools: Sequence[Tool] | Mapping[str, Tool] | None) -> dict[str, Tool]:
    """Normalize ``tools=`` (a list or a ``{name: Tool}`` dict) to a dict by name.

    Example::

        assert list(tools_by_name([get_weather])) == ["get_weather"]
        assert tools_by_name({"weather": get_weather})["weather"].name == "weather"   # its key
    """
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        out: dict[str, Tool] = {}
        for key, t in tools.items():
            if not isinstance(t, Tool):
                raise TypeError(f"tools[{key!r}] is not a Tool; define it with hs.tool()")
            out[key] = t if t.name == key else replace(t, name=key)
        return out
    result: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise TypeError(f"{t!r} is not a Tool; define it with hs.tool()")
        if t.name in result:
            raise ValueError(f"two tools are named {t.name!r}")
        result[t.name] = t
    return result


def resolve_contexts(tools: Mapping[str, Tool], tools_context: Any) -> dict[str, Any]:
    """Each tool's validated, frozen context (raises ToolContextError naming the tool).

    Example::

        contexts = resolve_contexts({"get_weather": get_weather}, {})   # no context_schema: None
        assert contexts == {"get_weather": None}
    """
    return {name: t.resolve_context(tools_context) for name, t in tools.items()}


def dump_output(output: Any) -> str:
    """A tool result as the tool message's content: strings as they are, the rest as JSON.

    Example::

        assert dump_output("plain text") == "plain text"
        assert dump_output({"temperature": 21}) == '{"temperature": 21}'
    """
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(output, ensure_ascii=False, default=str)
