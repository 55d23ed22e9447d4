"""A skill's files as a tool reads them: :class:`SkillHandle` (what ``ctx.get_skill(name)``
returns) and :class:`SkillFile` (one file, read when asked, from the sandbox when the agent has
one, else from the skill itself).

This module builds on the skills and the sandbox protocol only, not on tools, so that the
tool context (``helix_stream/_tool_context.py``) can name it without an import circle.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from .._sandbox_protocol import Sandbox
from ..errors import SandboxFileNotFoundError, SandboxPathError, SkillError, SkillNotFoundError
from ._paths import WORKSPACE
from ._skills import SKILL_FILE, Skill, skill_file_path

__all__ = ["SKILLS_DIR", "SandboxSource", "SkillFile", "SkillHandle", "unknown_skill"]

SKILLS_DIR = f"{WORKSPACE}/skills"

# What a handle reads through: a sandbox, or how to get one (``ctx.get_sandbox``), or none.
SandboxSource = Sandbox | Callable[[], Awaitable[Sandbox]] | None


@dataclass(frozen=True, slots=True)
class SkillFile:
    """One file of a skill, read when asked (``await handle.file(p).text()``).

    Attributes:
        skill: The skill's name.
        path: The file's path in the skill's folder (``SKILL.md`` is the skill itself).

    Example::

        review = hs.Skill("code-review", "How to review.", "Read the diff twice.",
                          files={"references/checklist.md": "- tests"})

        @hs.tool(description="The review checklist.")
        async def checklist(ctx: hs.ToolContext) -> str:
            return await ctx.get_skill("code-review").file("references/checklist.md").text()
    """

    skill: str
    path: str
    _skills: Mapping[str, Skill] = field(repr=False)
    _sandbox: SandboxSource = field(repr=False)

    async def bytes(self) -> bytes:
        """The file's bytes: from the sandbox when there is one, else from the skill.

        Raises:
            SkillNotFoundError: there is no such skill, or it has no such file.
        """
        clean = skill_file_path(self.path)
        if self.skill not in self._skills or clean is None:
            raise self._missing()
        if self._sandbox is None:
            data = self._skills[self.skill].read(clean)
            if data is None:
                raise self._missing()
            return data
        sandbox = self._sandbox if isinstance(self._sandbox, Sandbox) else await self._sandbox()
        try:
            return await sandbox.read_file(f"{SKILLS_DIR}/{self.skill}/{clean}")
        except (SandboxFileNotFoundError, SandboxPathError) as exc:
            # Gone from the sandbox's copy, a folder now, or a link out: no such file.
            raise self._missing() from exc

    async def text(self) -> str:
        """The file as UTF-8 text.

        Raises:
            SkillNotFoundError: there is no such skill, or it has no such file.
            SkillError: the file is not UTF-8 text.
        """
        data = await self.bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillError(
                f"File {self.path!r} of skill {self.skill!r} is not UTF-8 text ({len(data)} "
                "bytes): read it with .bytes()"
            ) from None

    def _missing(self) -> SkillNotFoundError:
        if self.skill not in self._skills:
            return unknown_skill(self.skill, self._skills)
        files = ", ".join([SKILL_FILE, *self._skills[self.skill].files])
        return SkillNotFoundError(
            f"Skill {self.skill!r} has no file {self.path!r}; its files are: {files}."
        )


@dataclass(frozen=True, slots=True)
class SkillHandle:
    """A skill by name, as ``ctx.get_skill(name)`` returns it. Making one checks nothing: an
    unknown skill shows up when a file is read (:class:`~helix_stream.errors.SkillNotFoundError`).

    Attributes:
        name: The skill's name.

    Example::

        @hs.tool(description="Review a diff with the team's checklist.")
        async def review(diff: str, ctx: hs.ToolContext) -> str:
            skill = ctx.get_skill("code-review")       # a SkillHandle, in a session run
            checklist = await skill.file("references/checklist.md").text()
            return checklist + diff
    """

    name: str
    _skills: Mapping[str, Skill] = field(repr=False)
    _sandbox: SandboxSource = field(repr=False)

    def file(self, path: str) -> SkillFile:
        """One of the skill's files (``"SKILL.md"`` for the skill itself)."""
        return SkillFile(self.name, path, self._skills, self._sandbox)


def unknown_skill(name: str, skills: Mapping[str, Skill]) -> SkillNotFoundError:
    known = ", ".join(skills) or "(none)"
    return SkillNotFoundError(f"No skill named {name!r}; the skills are: {known}.")
