"""SkillSet: the index, the layout in a sandbox, and the get_skill handles (with and without one)."""

from __future__ import annotations

from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.sandbox import LocalSandboxSession, SkillSet
from tests.sandbox._util import session

RESEARCH = hs.Skill(
    "research",
    "Find sources\n  and cite them.",
    "# Research\n\nUse the checklist.\n",
    files={"references/checklist.md": "- two sources\n", "logo.bin": b"\xff\x00"},
)
REVIEW = hs.Skill("code-review", "How to review a pull request.", "Read the diff twice.")


@pytest.fixture
async def box(tmp_path: Path) -> LocalSandboxSession:
    return await hs.LocalSandbox(tmp_path).create(session(), "coder")


def test_the_index_lists_every_skill_by_name_in_one_fixed_text() -> None:
    index = SkillSet([RESEARCH, REVIEW]).index()
    assert index == (
        "Skills: instructions for particular tasks. Before such a task, call load_skill(name) "
        "for the skill's instructions, and load_skill(name, path) for a file it mentions.\n"
        "- code-review: How to review a pull request.\n"
        "- research: Find sources and cite them."
    )


def test_the_index_is_the_same_bytes_whatever_order_the_skills_come_in() -> None:
    first = SkillSet([RESEARCH, REVIEW]).index(sandbox=True)
    again = SkillSet([REVIEW, RESEARCH]).index(sandbox=True)
    rebuilt = SkillSet(
        [hs.Skill(s.name, s.description, s.content, s.files) for s in (RESEARCH, REVIEW)]
    )
    assert first.encode() == again.encode() == rebuilt.index(sandbox=True).encode()
    assert "/workspace/skills/<name>/" in first
    assert "/workspace" not in SkillSet([RESEARCH]).index()


def test_no_skills_no_index_and_duplicates_are_refused() -> None:
    assert SkillSet([]).index() == ""
    with pytest.raises(hs.SkillFormatError, match="two skills are named 'research'"):
        SkillSet([RESEARCH, hs.Skill("research", "other", "x")])
    with pytest.raises(hs.SkillFormatError, match="not a Skill"):
        SkillSet([{"name": "research"}])  # type: ignore[list-item]


async def test_a_handle_without_a_sandbox_reads_the_skills_own_files() -> None:
    skills = SkillSet([RESEARCH])
    handle = skills.handle("research")
    assert handle.name == "research"
    assert await handle.file("references/checklist.md").text() == "- two sources\n"
    assert await handle.file("logo.bin").bytes() == b"\xff\x00"
    assert await handle.file("SKILL.md").text() == RESEARCH.skill_md()


async def test_an_unknown_skill_shows_up_only_when_a_file_is_read() -> None:
    handle = SkillSet([RESEARCH]).handle("nope")  # no error yet: the handle is lazy
    assert handle.name == "nope"
    with pytest.raises(
        hs.SkillNotFoundError, match="No skill named 'nope'; the skills are: research"
    ):
        await handle.file("SKILL.md").text()


@pytest.mark.parametrize(
    "path", ["missing.md", "../code-review/SKILL.md", "/etc/passwd", "", "references"]
)
async def test_an_unknown_file_is_a_typed_error_with_or_without_a_sandbox(
    box: LocalSandboxSession, path: str
) -> None:
    skills = SkillSet([RESEARCH, REVIEW])
    await skills.install(box)
    for handle in (skills.handle("research"), skills.handle("research", sandbox=box)):
        with pytest.raises(hs.SkillNotFoundError, match="has no file") as caught:
            await handle.file(path).bytes()
        assert caught.value.http_status == 404


async def test_a_binary_file_as_text_is_a_typed_error() -> None:
    with pytest.raises(hs.SkillError, match="not UTF-8"):
        await SkillSet([RESEARCH]).handle("research").file("logo.bin").text()


async def test_install_lays_the_skills_out_under_workspace_skills(
    box: LocalSandboxSession,
) -> None:
    written = await SkillSet([RESEARCH, REVIEW]).install(box)
    assert written == [
        "/workspace/skills/code-review/SKILL.md",
        "/workspace/skills/research/SKILL.md",
        "/workspace/skills/research/logo.bin",
        "/workspace/skills/research/references/checklist.md",
    ]
    listing = await box.run("find skills -type f | sort")
    assert listing.stdout.split() == [p.removeprefix("/workspace/") for p in written]
    # What is laid out reads back as the same skills.
    assert hs.skills_from_dir(Path(box.workspace, "skills")) == [REVIEW, RESEARCH]


async def test_a_handle_with_a_sandbox_reads_the_sandboxs_copy(box: LocalSandboxSession) -> None:
    skills = SkillSet([RESEARCH])
    await skills.install(box)
    await box.run("echo '- three sources' > skills/research/references/checklist.md")
    handle = skills.handle("research", sandbox=box)
    assert await handle.file("references/checklist.md").text() == "- three sources\n"
    await box.run("rm -r skills/research")
    with pytest.raises(hs.SkillNotFoundError, match="has no file"):
        await handle.file("SKILL.md").text()


async def test_a_sandbox_getter_is_called_only_when_a_file_is_read(
    box: LocalSandboxSession,
) -> None:
    skills = SkillSet([RESEARCH])
    await skills.install(box)
    calls: list[str] = []

    async def get_sandbox() -> hs.Sandbox:
        calls.append("get")
        return box

    handle = skills.handle("research", sandbox=get_sandbox)
    file = handle.file("references/checklist.md")
    assert calls == []
    assert await file.text() == "- two sources\n"
    assert calls == ["get"]
    with pytest.raises(hs.SkillNotFoundError):
        await skills.handle("nope", sandbox=get_sandbox).file("SKILL.md").text()
    assert calls == ["get"]  # an unknown skill needs no sandbox to be known as unknown
