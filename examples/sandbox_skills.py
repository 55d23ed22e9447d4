"""An agent with a skill and a sandbox: its tool runs the skill's script in the session's sandbox.

The skill ``release-check`` (a ``SKILL.md`` and a script beside it) is listed in the agent's
system prompt; the model may read it with the built-in ``load_skill`` tool. The agent's
sandbox is an ``hs.LocalSandbox`` — a directory per session, for development and trusted code,
**not isolation** — made at the first ``ctx.get_sandbox()`` of the session: the skill is laid
out in it under ``/workspace/skills/release-check/``, then ``sandbox_on_session`` prepares it
(it writes the release's ``VERSION``). The tool ``run_check`` reads the skill's script through
``ctx.get_skill()`` and runs it with ``sandbox.run()``.

Run it:

    python examples/sandbox_skills.py --once     # offline (the embedded demo model): two turns

The second turn finds the same sandbox again (its id is stored with the session).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Sequence

import helix_stream as hs

CHECK = hs.Skill(
    "release-check",
    "How to check a release before it ships. Load it before checking one.",
    "# Release check\nRun scripts/check.sh from /workspace; it prints the version and 'ok'.",
    files={
        "scripts/check.sh": 'version=$(cat VERSION)\necho "version $version"\n'
        'test -n "$version" && echo ok\n',
    },
)

checks = hs.define_state("example.release.checks", lambda: 0)


async def prepare(ctx: hs.HookContext) -> None:
    """Runs once, when the session's sandbox is made: put the release in it."""
    sandbox = await ctx.get_sandbox()
    await sandbox.write_file("/workspace/VERSION", "1.4.2\n")


@hs.tool
async def run_check(ctx: hs.ToolContext) -> dict[str, object]:
    """Run the release check in the sandbox."""
    sandbox = await ctx.get_sandbox()
    script = await ctx.get_skill("release-check").file("scripts/check.sh").text()
    result = await sandbox.run(script)
    count = checks.update(lambda n: n + 1)
    return {"check": count, "exit_code": result.exit_code, "output": result.stdout.split("\n")[0]}


def make_agent(root_dir: str) -> hs.Agent:
    return hs.Agent(
        name="release",
        system="You check releases.",
        model="helix/demo",
        tools=[run_check],
        skills=[CHECK],
        sandbox=hs.LocalSandbox(root_dir),
        sandbox_on_session=prepare,
    )


async def run_once() -> str:
    """Two turns of one session; return what they show."""
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as root_dir:
        executor = hs.Executor()
        agent = make_agent(root_dir)
        index = (agent.system_prompt or "").splitlines()[-1]
        lines.append(f"skill index: {index}")
        for _ in range(2):
            result = executor.run(agent, "release-1", "Please run the check on this release.")
            lines.append(f"answer: {await result.text()}")
        lines.append(f"sandboxes made: {len(os.listdir(root_dir))}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="an offline run, then exit")
    args = parser.parse_args(argv)
    if not args.once:
        parser.print_help()
        return 0
    from helix_stream.models import load_litellm

    load_litellm()  # at startup, not while the first question waits
    print(asyncio.run(run_once()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
