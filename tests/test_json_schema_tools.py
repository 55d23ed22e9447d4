"""Tools described by a JSON schema, tools offered but unavailable, and shared context entries."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from helix_stream.errors import InvalidRequestError, ToolContextError
from tests.loopback import LoopbackServer, text, tool_calls

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer"}},
    "required": ["city"],
    "additionalProperties": False,
    "title": "Lookup",
}


async def test_a_json_schema_is_offered_as_given_and_the_body_gets_the_arguments_dict(
    loopback: LoopbackServer,
) -> None:
    seen: list[Any] = []
    lookup = hs.tool(
        name="lookup", input_schema=SCHEMA, execute=lambda args: seen.append(args) or "ok"
    )
    loopback.script(tool_calls(("lookup", {"city": "Rome", "days": 2})), text("done"))
    await hs.stream_text(prompt="go", tools=[lookup], **loopback.llm()).consume()
    offered = loopback.bodies()[0]["tools"][0]["function"]["parameters"]
    assert offered == {k: v for k, v in SCHEMA.items() if k != "title"}
    assert list(offered["properties"]) == ["city", "days"]
    assert seen == [{"city": "Rome", "days": 2}] and type(seen[0]) is dict


async def test_arguments_that_break_the_json_schema_are_an_error_result_naming_each_problem(
    loopback: LoopbackServer,
) -> None:
    ran: list[Any] = []

    @hs.tool(name="lookup", input_schema=SCHEMA)
    def lookup(args: dict[str, Any]) -> str:
        ran.append(args)
        return "ok"

    loopback.script(tool_calls(("lookup", {"city": "R", "extra": 1, "days": "two"})), text("sorry"))
    chunks = [c async for c in hs.stream_text(prompt="go", tools=[lookup], **loopback.llm())]
    error = next(c.error_text for c in chunks if c.type == "tool-output-error")
    assert error.startswith("Invalid input for tool 'lookup': ")
    assert "(root): Additional properties are not allowed ('extra' was unexpected)" in error
    assert "city: 'R' is too short" in error and "days: 'two' is not of type 'integer'" in error
    assert ran == []
    tool_message = next(m for m in loopback.bodies()[1]["messages"] if m["role"] == "tool")
    assert tool_message["content"] == error


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "string"}, "must describe an object"),
        ({"type": "object", "properties": {"a": {"type": "nonsense"}}}, "not a valid JSON schema"),
        ({"type": "object", "default": {1, 2}}, "is not JSON"),
    ],
)
def test_a_schema_that_is_not_a_valid_object_schema_is_refused(schema: Any, problem: str) -> None:
    with pytest.raises(InvalidRequestError, match=problem):
        hs.tool(name="bad", input_schema=schema, execute=lambda args: None)


async def test_an_unavailable_tool_is_still_offered_but_a_call_runs_nothing(
    loopback: LoopbackServer,
) -> None:
    ran: list[Any] = []
    gone = replace(
        hs.tool(name="gone", input_schema=SCHEMA, execute=lambda args: ran.append(args)),
        available=False,
    )
    loopback.script(tool_calls(("gone", {"city": "Rome"})), text("ok"))
    chunks = [c async for c in hs.stream_text(prompt="go", tools=[gone], **loopback.llm())]
    assert [(c.type, c.reason) for c in chunks if c.type == "tool-not-executed"] == [
        ("tool-not-executed", "tool_unavailable")
    ]
    assert ran == []
    first, second = loopback.bodies()
    assert (
        [t["function"]["name"] for t in first["tools"]]
        == ["gone"]
        == [t["function"]["name"] for t in second["tools"]]
    )
    content = json.loads(next(m for m in second["messages"] if m["role"] == "tool")["content"])
    assert content["reason"] == "tool_unavailable"


class Creds(BaseModel):
    token: str


async def test_tools_with_a_context_key_share_one_tools_context_entry(
    loopback: LoopbackServer,
) -> None:
    def reader(name: str) -> hs.Tool:
        found = hs.tool(name=name, input_schema=SCHEMA, context_schema=Creds,
                        execute=lambda args, ctx: ctx.context.token[-4:])  # fmt: skip
        return replace(found, context_key="shared")

    tools = [reader("a"), reader("b")]
    loopback.script(tool_calls(("a", {"city": "Rome"}), ("b", {"city": "Oslo"})), text("ok"))
    run = hs.stream_text(prompt="go", tools=tools, tools_context={"shared": {"token": "tok-1234"}},
                         **loopback.llm())  # fmt: skip
    outputs = [c.output for c in [c async for c in run] if c.type == "tool-output-available"]
    assert outputs == ["1234", "1234"]
    with pytest.raises(ToolContextError, match="tools_context has no 'shared' entry"):
        hs.stream_text(prompt="go", tools=tools, **loopback.llm())
