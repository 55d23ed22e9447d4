"""``SkillSet``: what an agent does with its skills — the index, ``load_skill``, the layout in a
sandbox, and the handles ``get_skill`` returns.

An agent's skills are fixed with its definition, so everything here is a pure function of the
skills (sorted by name), computed once:

- :meth:`SkillSet.index` is the text for the system prompt: each skill's name and description,
  in name order, byte for byte the same for the same skills (prompt caches keep hitting);
- :attr:`SkillSet.tool` is the built-in ``load_skill(name, path=None)`` tool;
- :meth:`SkillSet.install` writes every skill into a sandbox under ``/workspace/skills/<name>/``;
- :meth:`SkillSet.handle` is ``ctx.get_skill(name)``: synchronous, reading only when asked.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from .._sandbox_protocol import Sandbox
from .._tool_source import SourcedTools, ToolRequest
from ..tools import Tool, ToolContext
from ._handle import SKILLS_DIR, SandboxSource, SkillFile, SkillHandle, unknown_skill
from ._skills import Skill, check_skills

__all__ = ["LOAD_SKILL_TOOL", "SKILLS_DIR", "SkillFile", "SkillHandle", "SkillSet"]

LOAD_SKILL_TOOL = "load_skill"


class LoadSkillInput(BaseModel):
    """The arguments of ``load_skill``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The skill's name, as the skill index lists it.")
    path: str | None = Field(
        default=None,
        description="A file of the skill (e.g. 'references/checklist.md'); omit it for the "
        "skill's instructions.",
    )


class SkillSet:
    """An agent's skills, sorted by name, and what the agent does with them.

    Args:
        skills: The skills (``hs.skills_from_dir(...)`` or ``hs.Skill`` values).

    Raises:
        SkillFormatError: two skills share a name, or an entry is not a Skill.

    Example::

        skills = SkillSet([hs.Skill("code-review", "How to review.", "Read the diff twice.")])
        print([skill.name for skill in skills.skills])    # what Agent(skills=...) builds
    """

    __slots__ = ("_by_name", "skills", "tool")

    name = ""  # as a tool source: no tools_context entry, no stored offer

    def __init__(self, skills: Sequence[Skill]) -> None:
        self.skills: tuple[Skill, ...] = check_skills(skills)
        self._by_name: dict[str, Skill] = {skill.name: skill for skill in self.skills}
        self.tool: Tool = Tool(
            name=LOAD_SKILL_TOOL,
            description="Load a skill: its instructions, or one of its files (path=...). "
            "The skills are listed in the system prompt.",
            input_schema=LoadSkillInput,
            execute=self._load,
        )

    async def get_tools(self, request: ToolRequest) -> SourcedTools:
        """The skills as a tool source (``helix_stream/_tool_source.py``): ``load_skill``."""
        return SourcedTools(tools=(self.tool,) if self.skills else ())

    def index(self, *, sandbox: bool = False) -> str:
        """The skill index for the system prompt (``""`` without skills).

        Args:
            sandbox: Whether the agent has a sandbox (the index then says where the files are).
        """
        if not self.skills:
            return ""
        lines = [
            "Skills: instructions for particular tasks. Before such a task, call "
            f"{LOAD_SKILL_TOOL}(name) for the skill's instructions, and "
            f"{LOAD_SKILL_TOOL}(name, path) for a file it mentions.",
        ]
        if sandbox:
            lines.append(f"The skills' files are also in the sandbox, in {SKILLS_DIR}/<name>/.")
        # One line per skill, whatever line breaks a description has.
        lines += [f"- {s.name}: {' '.join(s.description.split())}" for s in self.skills]
        return "\n".join(lines)

    def handle(self, name: str, *, sandbox: SandboxSource = None) -> SkillHandle:
        """``ctx.get_skill(name)``: reads from ``sandbox`` (a sandbox, or an async function
        that returns one, called at the first read) or, without one, from the skill itself."""
        return SkillHandle(name, self._by_name, sandbox)

    async def install(self, sandbox: Sandbox) -> list[str]:
        """Write every skill into ``sandbox`` under ``/workspace/skills/<name>/``.

        Returns:
            The paths written, in order.
        """
        written: list[str] = []
        for skill in self.skills:
            for path, data in skill.layout().items():
                target = f"{SKILLS_DIR}/{skill.name}/{path}"
                await sandbox.write_file(target, data)
                written.append(target)
        return written

    async def _load(self, input: LoadSkillInput, ctx: ToolContext) -> str:
        # The skill as it was defined (not the sandbox's copy, which commands may change):
        # the same call returns the same text, with or without a sandbox.
        skill = self._by_name.get(input.name)
        if skill is None:
            raise unknown_skill(input.name, self._by_name)
        if input.path is not None:
            return await self.handle(input.name).file(input.path).text()
        if not skill.files:
            return skill.content
        listing = "\n".join(f"- {path}" for path in skill.files)
        return (
            f"{skill.content}\n\nFiles of this skill ({LOAD_SKILL_TOOL} with path=...):\n{listing}"
        )
