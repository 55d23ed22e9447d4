"""An agent's skills in its sessions: the index in the system prompt, ``load_skill``, the
layout in the sandbox, ``ctx.get_skill()``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import helix_stream as hs
from tests.executor._util import assert_prefix_stable
from tests.loopback import LoopbackServer, text, tool_calls

RESEARCH = hs.Skill(
    "research",
    "Find sources and cite them.\nLoad it before a research question.",
    "# Research\nRead references/checklist.md first.",
    files={"references/checklist.md": "- two sources\n- dates\n"},
)
REVIEW = hs.Skill("code-review", "How to review a pull request.", "Read the diff twice.")


class Path_(BaseModel):
    path: str


def agent(loopback: LoopbackServer, **kw: Any) -> hs.Agent:
    return hs.Agent(
        name="skilled",
        system="You help.",
        model="openai/loopback",
        settings={"api_base": loopback.api_base, "api_key": "k"},
        max_retries=0,
        **{"skills": [RESEARCH, REVIEW], **kw},
    )


def system_of(body: bytes) -> str:
    [system] = [m for m in json.loads(body)["messages"] if m["role"] == "system"]
    return str(system["content"])


def tool_contents(body: bytes) -> list[str]:
    return [m["content"] for m in json.loads(body)["messages"] if m["role"] == "tool"]


async def test_the_skill_index_is_in_the_system_prompt_and_the_prefix_holds(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(
        tool_calls(("load_skill", {"name": "research"})),
        text("I will research."),
        tool_calls(("load_skill", {"name": "research", "path": "references/checklist.md"})),
        text("Checked."),
        text("Bye."),
    )
    a = agent(loopback)
    for message in ("Research Mars", "Check the list", "Thanks"):
        result = executor.run(a, "s", message)
        await result.consume()
        assert result.error is None
    bodies = loopback.requests
    assert len(bodies) == 5
    assert_prefix_stable(bodies)
    systems = {system_of(b) for b in bodies}
    assert systems == {
        "You help.\n\nSkills: instructions for particular tasks. Before such a task, call "
        "load_skill(name) for the skill's instructions, and load_skill(name, path) for a file "
        "it mentions.\n"
        "- code-review: How to review a pull request.\n"
        "- research: Find sources and cite them. Load it before a research question."
    }
    tools = [t["function"]["name"] for t in json.loads(bodies[0])["tools"]]
    assert tools == ["load_skill"]
    assert tool_contents(bodies[1])[0].startswith("# Research\nRead references/checklist.md")
    assert tool_contents(bodies[3])[-1] == "- two sources\n- dates\n"


async def test_the_index_is_the_same_bytes_whatever_order_the_skills_come_in(
    loopback: LoopbackServer,
) -> None:
    one = agent(loopback, skills=[RESEARCH, REVIEW])
    other = agent(loopback, skills=[REVIEW, RESEARCH])
    assert one.system_prompt == other.system_prompt
    with_sandbox = agent(loopback, sandbox=hs.LocalSandbox("/tmp/unused"))
    assert with_sandbox.system_prompt is not None
    assert "/workspace/skills/<name>/" in with_sandbox.system_prompt
    assert agent(loopback, skills=[]).system_prompt == "You help."


async def test_an_unknown_skill_is_an_error_result_the_model_sees(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(tool_calls(("load_skill", {"name": "cooking"})), text("sorry"))
    steps = await executor.run(agent(loopback), "s", "cook").steps()
    [result] = steps[0].tool_results
    assert result.status == "error"
    assert "No skill named 'cooking'; the skills are: code-review, research." in (
        result.error or ""
    )


async def test_load_skill_obeys_the_tool_gate(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    loopback.script(text("first"))
    a = agent(loopback)
    await executor.run(a, "s", "hi").consume()
    await executor.add_context("s", [hs.disable_tools(["load_skill"])])
    loopback.script(tool_calls(("load_skill", {"name": "research"})), text("ok"))
    result = executor.run(a, "s", "research")
    chunks = [c async for c in result]
    [refused] = [c for c in chunks if isinstance(c, hs.chunks.ToolNotExecuted)]
    assert refused.reason == "tool_inactive"
    assert "# Research" not in loopback.requests[-1].decode()
    # The offer did not change: the tool list is the same bytes as before the switch-off.
    assert json.loads(loopback.requests[0])["tools"] == json.loads(loopback.requests[-1])["tools"]


def test_a_user_tool_named_load_skill_is_refused_with_skills() -> None:
    clash = hs.tool(name="load_skill", input_schema=Path_, execute=lambda i: "x")
    with pytest.raises(hs.errors.InvalidRequestError, match="load_skill"):
        hs.Agent(name="a", tools=[clash], skills=[RESEARCH])
    assert hs.Agent(name="a", tools=[clash]).tool_map["load_skill"] is clash  # no skills: fine
    with pytest.raises(hs.SkillFormatError, match="two skills"):
        hs.Agent(name="a", skills=[RESEARCH, RESEARCH])


async def test_skills_are_laid_out_in_the_sandbox_and_get_skill_reads_them_there(
    executor: hs.Executor, loopback: LoopbackServer, tmp_path: Path
) -> None:
    async def read(input: Path_, ctx: hs.ToolContext) -> dict[str, Any]:
        sandbox = await ctx.get_sandbox()
        listing = await sandbox.run("find skills -type f | sort")
        # A command changes the sandbox's copy: get_skill reads that copy.
        await sandbox.run("echo '- a third' >> skills/research/references/checklist.md")
        handle = ctx.get_skill("research")
        return {
            "files": listing.stdout.split(),
            "name": handle.name,
            "checklist": await handle.file(input.path).text(),
        }

    tool = hs.tool(name="read", input_schema=Path_, execute=read)
    a = agent(loopback, tools=[tool], sandbox=hs.LocalSandbox(tmp_path / "sb"))
    loopback.script(tool_calls(("read", {"path": "references/checklist.md"})), text("ok"))
    [step, _] = await executor.run(a, "s", "go").steps()
    output = step.tool_results[0].output
    assert output == {
        "files": [
            "skills/code-review/SKILL.md",
            "skills/research/SKILL.md",
            "skills/research/references/checklist.md",
        ],
        "name": "research",
        "checklist": "- two sources\n- dates\n- a third\n",
    }


async def test_get_skill_without_a_sandbox_reads_the_skills_files_and_never_makes_one(
    executor: hs.Executor, loopback: LoopbackServer
) -> None:
    errors: list[BaseException] = []

    async def read(input: Path_, ctx: hs.ToolContext) -> str:
        handle = ctx.get_skill("nope")  # making a handle checks nothing
        try:
            await handle.file("SKILL.md").text()
        except hs.SkillNotFoundError as exc:
            errors.append(exc)
        return await ctx.get_skill("research").file(input.path).text()

    seen: list[str] = []

    async def on_step(event: hs.LifecycleEvent, ctx: hs.HookContext) -> None:
        seen.append(await ctx.get_skill("code-review").file("SKILL.md").text())

    tool = hs.tool(name="read", input_schema=Path_, execute=read)
    hook = hs.define_hook(events={"step.completed": on_step})
    a = agent(loopback, tools=[tool], hooks=[hook])
    loopback.script(tool_calls(("read", {"path": "references/checklist.md"})), text("ok"))
    [step, _] = await executor.run(a, "s", "go").steps()
    assert step.tool_results[0].output == "- two sources\n- dates\n"
    [unknown] = errors
    assert "No skill named 'nope'" in unknown.message
    assert seen[0].startswith("---\nname: code-review\n")


async def test_get_skill_outside_a_session_says_what_to_do(loopback: LoopbackServer) -> None:
    errors: list[BaseException] = []

    def read(input: Path_, ctx: hs.ToolContext) -> str:
        try:
            ctx.get_skill("research")
        except hs.FrameworkNotSupportedError as exc:
            errors.append(exc)
        return "ok"

    loopback.script(tool_calls(("read", {"path": "x"})), text("ok"))
    await hs.stream_text(
        model="openai/loopback",
        prompt="go",
        tools=[hs.tool(name="read", input_schema=Path_, execute=read)],
        max_retries=0,
        api_base=loopback.api_base,
        api_key="k",
    ).consume()
    [error] = errors
    assert "Executor.run()" in error.message
