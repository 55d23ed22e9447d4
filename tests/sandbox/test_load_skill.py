"""The load_skill tool through hs.stream_text against the loopback server (real HTTP via litellm)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import helix_stream as hs
from helix_stream.sandbox import SkillSet
from tests.executor._util import assert_prefix_stable
from tests.loopback import LoopbackServer, text, tool_calls

SKILLS = SkillSet(
    [
        hs.Skill(
            "research",
            "Find sources and cite them.",
            "# Research\n\nCheck references/checklist.md.\n",
            files={"references/checklist.md": "- two sources\n- dates\n"},
        ),
        hs.Skill("code-review", "How to review a pull request.", "Read the diff twice."),
    ]
)
SYSTEM = "You are a careful assistant.\n\n" + SKILLS.index()


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


def tools_bytes(raw: bytes) -> bytes:
    start = raw.index(b'"tools":') + len(b'"tools":')
    text_ = raw[start:].decode()
    _, end = json.JSONDecoder().raw_decode(text_)
    return text_[:end].encode()


async def test_the_model_loads_a_skill_and_a_file_and_sees_an_unknown_one_as_an_error(
    loopback: LoopbackServer,
) -> None:
    loopback.script(
        tool_calls(("load_skill", {"name": "research"}), call_ids=["call_a"]),
        tool_calls(
            ("load_skill", {"name": "research", "path": "references/checklist.md"}),
            call_ids=["call_b"],
        ),
        tool_calls(("load_skill", {"name": "astrology"}), call_ids=["call_c"]),
        text("Done."),
    )
    result = hs.stream_text(
        **loopback.llm(), system=SYSTEM, prompt="Research this.", tools=[SKILLS.tool]
    )
    assert await result.text() == "Done."
    steps = await result.steps()
    statuses = [(r.tool_call_id, r.status) for s in steps for r in s.tool_results]
    assert statuses == [("call_a", "output"), ("call_b", "output"), ("call_c", "error")]

    bodies = loopback.bodies()
    assert len(bodies) == 4
    first, second, third = (tool_messages(b)[-1] for b in bodies[1:])
    assert first == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "# Research\n\nCheck references/checklist.md.\n\n\n"
        "Files of this skill (load_skill with path=...):\n- references/checklist.md",
    }
    assert second["tool_call_id"] == "call_b"
    assert second["content"] == "- two sources\n- dates\n"
    assert third["tool_call_id"] == "call_c"
    assert "No skill named 'astrology'; the skills are: code-review, research." in third["content"]
    assert third["content"].startswith("Tool 'load_skill' failed: SkillNotFoundError")


async def test_the_system_prompt_with_the_index_and_the_tool_stay_byte_identical(
    loopback: LoopbackServer,
) -> None:
    loopback.script(
        tool_calls(("load_skill", {"name": "code-review"}), call_ids=["call_a"]),
        tool_calls(("load_skill", {"name": "research"}), call_ids=["call_b"]),
        text("Reviewed."),
    )
    result = hs.stream_text(
        **loopback.llm(), system=SYSTEM, prompt="Review it.", tools=[SKILLS.tool]
    )
    await result.text()
    raws = loopback.requests
    assert len(raws) == 3
    assert_prefix_stable(raws)
    for raw in raws:
        assert json.loads(raw)["messages"][0] == {"role": "system", "content": SYSTEM}
    assert len({tools_bytes(raw) for raw in raws}) == 1
    (tool,) = json.loads(raws[0])["tools"]
    assert tool["function"]["name"] == "load_skill"
    assert tool["function"]["parameters"]["required"] == ["name"]
    assert tool["function"]["parameters"]["additionalProperties"] is False


@pytest.mark.parametrize(
    "arguments", [{"path": "x.md"}, {"name": "research", "extra": 1}], ids=["no-name", "extra"]
)
async def test_invalid_arguments_give_the_model_an_error_result(
    loopback: LoopbackServer, arguments: dict[str, Any]
) -> None:
    loopback.script(tool_calls(("load_skill", arguments), call_ids=["call_a"]), text("ok"))
    result = hs.stream_text(**loopback.llm(), system=SYSTEM, prompt="Go.", tools=[SKILLS.tool])
    await result.text()
    steps = await result.steps()
    assert [r.status for r in steps[0].tool_results] == ["error"]
    (message,) = tool_messages(loopback.bodies()[1])
    assert message["tool_call_id"] == "call_a" and "load_skill" in message["content"]
