"""Skills: hs.Skill's rules and hs.skills_from_dir reading SKILL.md folders from a temp dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.sandbox._skills import parse_skill_md

RESEARCH = """---
name: research
description: >-
  Find sources and cite them.
  Load it before answering a research question.
license: MIT
metadata:
  author: "helix: tests"
  version: "1.0"
---

# Research

Read references/checklist.md first.
"""


def write(folder: Path, files: dict[str, str | bytes]) -> Path:
    for path, data in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data, encoding="utf-8")
    return folder


def test_skills_from_dir_reads_front_matter_content_and_files(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "research/SKILL.md": RESEARCH,
            "research/references/checklist.md": "- two sources\n",
            "research/scripts/logo.bin": b"\x89PNG\x00",
            "research/.hidden": "left out",
            "research/.git/config": "left out",
            "analysis/SKILL.md": "---\nname: analysis\ndescription: 'Numbers: tables.'\n---\nDo it.",
            ".drafts/SKILL.md": "not a skill folder",
            "README.md": "a file beside the folders",
        },
    )
    skills = hs.skills_from_dir(tmp_path)
    assert [s.name for s in skills] == ["analysis", "research"]
    analysis, research = skills
    assert analysis == hs.Skill("analysis", "Numbers: tables.", "Do it.")
    assert research.description == (
        "Find sources and cite them. Load it before answering a research question."
    )
    assert research.content == "# Research\n\nRead references/checklist.md first.\n"
    assert dict(research.files) == {
        "references/checklist.md": b"- two sources\n",
        "scripts/logo.bin": b"\x89PNG\x00",
    }


def test_windows_line_endings_become_newlines_and_a_byte_order_mark_is_dropped(
    tmp_path: Path,
) -> None:
    text = "\ufeff---\r\nname: crlf\r\ndescription: Written on Windows.\r\n---\r\nBody\r\n"
    write(tmp_path, {"crlf/SKILL.md": text})
    (skill,) = hs.skills_from_dir(tmp_path)
    assert (skill.name, skill.description, skill.content) == (
        "crlf",
        "Written on Windows.",
        "Body\n",
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("name: x\n", "must start with a '---' line"),
        ("---\nname: bad\ndescription: d\n", "no closing '---'"),
        ("---\nname: bad\ndescription: d: e\n---\nbody", "not valid YAML (line 3)"),
        ("---\n- a list\n---\nbody", "must be a mapping"),
        ("---\n---\nbody", "must be a mapping"),
        ("---\nname: bad\n---\nbody", "needs description"),
        ("---\ndescription: d\n---\nbody", "needs name"),
        ("---\nname: bad\ndescription: 12\n---\nbody", "needs description"),
        ("---\nname: other\ndescription: d\n---\nbody", "must match its folder's name 'bad'"),
        ("---\nname: bad\ndescription: '   '\n---\nbody", "non-empty"),
        (b"---\nname: bad\ndescription: \xff\n---\n", "is not UTF-8"),
    ],
    ids=[
        "no-front-matter",
        "unclosed",
        "bad-yaml",
        "a-list",
        "empty",
        "no-description",
        "no-name",
        "description-not-text",
        "name-mismatch",
        "blank-description",
        "not-utf8",
    ],
)
def test_a_malformed_skill_md_is_refused_naming_the_file(
    tmp_path: Path, text: str | bytes, says: str
) -> None:
    write(
        tmp_path, {"bad/SKILL.md": text, "good/SKILL.md": "---\nname: good\ndescription: d\n---\n"}
    )
    with pytest.raises(hs.SkillFormatError) as caught:
        hs.skills_from_dir(tmp_path)
    assert str(tmp_path / "bad" / "SKILL.md") in caught.value.message
    assert says in caught.value.message
    assert caught.value.code == "skill_invalid" and caught.value.http_status == 400


def test_a_folder_without_skill_md_is_refused(tmp_path: Path) -> None:
    write(tmp_path, {"notes/readme.txt": "x"})
    with pytest.raises(hs.SkillFormatError, match=r"needs a SKILL\.md") as caught:
        hs.skills_from_dir(tmp_path)
    assert str(tmp_path / "notes") in caught.value.message


def test_a_path_that_is_not_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(hs.SkillFormatError, match="needs a folder"):
        hs.skills_from_dir(tmp_path / "missing")


def test_symbolic_links_out_of_a_skill_are_refused(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"outside.txt": "secret", "skills/s/SKILL.md": "---\nname: s\ndescription: d\n---\n"},
    )
    os.symlink(tmp_path / "outside.txt", tmp_path / "skills/s/leak.txt")
    with pytest.raises(hs.SkillFormatError, match="symbolic link out") as caught:
        hs.skills_from_dir(tmp_path / "skills")
    assert "leak.txt" in caught.value.message


def test_a_link_inside_the_skill_is_read_and_a_linked_folder_is_refused(tmp_path: Path) -> None:
    write(tmp_path, {"s/SKILL.md": "---\nname: s\ndescription: d\n---\n", "s/real.md": "r"})
    os.symlink("real.md", tmp_path / "s/alias.md")
    (skill,) = hs.skills_from_dir(tmp_path)
    assert dict(skill.files) == {"alias.md": b"r", "real.md": b"r"}
    os.symlink(tmp_path / "s", tmp_path / "s/loop")
    with pytest.raises(hs.SkillFormatError, match="symbolic link to a folder"):
        hs.skills_from_dir(tmp_path)


@pytest.mark.parametrize(
    "name", ["Research", "re search", "-lead", "trail-", "dou--ble", "a" * 65, "", "ümlaut"]
)
def test_a_skill_name_must_follow_the_format(name: str) -> None:
    with pytest.raises(hs.SkillFormatError, match="name"):
        hs.Skill(name, "d", "c")


@pytest.mark.parametrize(
    "path", ["/abs.md", "../up.md", "a/../b.md", "a//b.md", "./a.md", "SKILL.md", ""]
)
def test_a_skill_file_path_must_be_plain_and_relative(path: str) -> None:
    with pytest.raises(hs.SkillFormatError, match="file path"):
        hs.Skill("s", "d", "c", files={path: "x"})


def test_a_description_is_required_and_bounded() -> None:
    with pytest.raises(hs.SkillFormatError, match="over 1024"):
        hs.Skill("s", "d" * 1025, "c")
    with pytest.raises(hs.SkillFormatError, match="non-empty"):
        hs.Skill("s", "", "c")
    assert hs.Skill("s", "d" * 1024, "c").description == "d" * 1024


def test_a_skills_files_are_frozen_and_sorted() -> None:
    files = {"b.md": "b", "a.md": b"a"}
    skill = hs.Skill("s", "d", "c", files=files)
    files["c.md"] = "later"
    assert list(skill.files) == ["a.md", "b.md"]
    with pytest.raises(TypeError):
        skill.files["x"] = "y"  # type: ignore[index]


@pytest.mark.parametrize(
    "description",
    [
        "Plain.",
        'Quotes " and \\ and: colons',
        "Line\nbreaks\tand tabs",
        "# not a comment",
        "yes",
        "Émoji 😀 and ünïcode",
        "NEL\x85, separators\u2028\u2029, DEL\x7f, C1\x9b, \ufffe and \ufeff",
    ],
    ids=["plain", "quotes", "breaks", "hash", "yes", "unicode", "yaml-specials"],
)
def test_skill_md_round_trips_through_the_reader(description: str) -> None:
    skill = hs.Skill("s", description, "# Body\n\nText.\n")
    meta, content = parse_skill_md(skill.skill_md(), "SKILL.md")
    assert (meta["name"], meta["description"], content) == ("s", description, skill.content)


def test_text_that_could_not_be_written_to_a_file_is_refused() -> None:
    with pytest.raises(hs.SkillFormatError, match="valid text"):
        hs.Skill("s", "lone \ud800 surrogate", "c")
    with pytest.raises(hs.SkillFormatError, match="valid text"):
        hs.Skill("s", "d", "lone \udfff surrogate")
