"""Skills: :class:`Skill` and :func:`skills_from_dir` (the agentskills.io ``SKILL.md`` format).

A skill is a named bundle of instructions (``content``) with a one-line ``description`` that
tells the model when to load it, and optional ``files`` beside it (references, scripts,
templates). On disk it is a directory::

    research/
      SKILL.md              YAML front matter (name, description), then the content
      references/checklist.md

The front matter is read with PyYAML's ``safe_load``: real ``SKILL.md`` files use folded and
quoted scalars (``description: >-``) and a ``metadata:`` mapping, which a ``key: value`` reader
would refuse or misread. Keys other than ``name`` and ``description`` (``license``,
``metadata``, ``allowed-tools``...) are read and not used.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import SandboxPathError, SkillFormatError
from ._paths import workspace_parts

__all__ = ["SKILL_FILE", "Skill", "check_skills", "skill_file_path", "skills_from_dir"]

SKILL_FILE = "SKILL.md"
# agentskills.io: lowercase letters, digits and single hyphens, 1 to 64, no hyphen at either end.
_NAME = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_NAME_MAX = 64
_DESCRIPTION_MAX = 1024
_YAML_RAW = re.compile("[\x7f-\x9f\u2028\u2029\ufffe\uffff]")


def skill_file_path(path: str) -> str | None:
    """A skill file's path in its one spelling (``a/b.md``), or ``None`` if it is not one:
    empty, absolute, or with a ``..`` part."""
    if not isinstance(path, str) or path.startswith("/"):
        return None
    try:
        parts = workspace_parts(path)
    except SandboxPathError:
        return None
    return "/".join(parts) or None


@dataclass(frozen=True, slots=True)
class Skill:
    """A reusable instruction bundle the model loads on demand.

    Example::

        review = hs.Skill(
            "code-review",
            "How to review a pull request. Load it before reviewing code.",
            "1. Read the diff twice...",
            files={"references/checklist.md": "- tests\\n- docs\\n"},
        )

    Args:
        name: Lowercase letters, digits and single hyphens, at most 64 characters.
        description: What it is for and when to load it (at most 1024 characters); the
            model sees it in the skill index.
        content: The instructions (``SKILL.md`` after its front matter).
        files: Files beside it, by relative path (``"references/checklist.md"``); text (kept
            as UTF-8) or bytes. ``skill.files`` holds them as bytes, sorted by path.

    Raises:
        SkillFormatError: a bad name, description or file path.
    """

    name: str
    description: str
    content: str
    files: Mapping[str, str | bytes] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"skill {self.name!r}"
        if not isinstance(self.name, str) or len(self.name) > _NAME_MAX:
            raise SkillFormatError(f"{where}: a name is a string of at most {_NAME_MAX} characters")
        if not _NAME.fullmatch(self.name):
            raise SkillFormatError(
                f"{where}: a name is lowercase letters, digits and single hyphens "
                "(no hyphen at the start or end), like 'code-review'"
            )
        if not isinstance(self.description, str) or not self.description.strip():
            raise SkillFormatError(f"{where}: the description must be a non-empty string")
        if len(self.description) > _DESCRIPTION_MAX:
            raise SkillFormatError(
                f"{where}: the description is over {_DESCRIPTION_MAX} characters"
            )
        if not isinstance(self.content, str):
            raise SkillFormatError(f"{where}: the content must be a string")
        if not _is_utf8(self.description) or not _is_utf8(self.content):
            # A lone surrogate: such text could never be written to a file.
            raise SkillFormatError(f"{where}: the description and content must be valid text")
        files: dict[str, bytes] = {}
        for path, data in dict(self.files).items():
            clean = skill_file_path(path)
            if clean is None or clean != path or clean == SKILL_FILE:
                raise SkillFormatError(
                    f"{where}: file path {path!r} must be relative, without '.' or '..' parts "
                    f"or repeated slashes, and not {SKILL_FILE}"
                )
            if not isinstance(data, str | bytes):
                raise SkillFormatError(f"{where}: file {path!r} must be str or bytes")
            files[path] = _as_bytes(data)
        object.__setattr__(self, "files", MappingProxyType(dict(sorted(files.items()))))

    def skill_md(self) -> str:
        """``SKILL.md`` as this skill's directory holds it: front matter, then the content."""
        header = f"---\nname: {self.name}\ndescription: {_yaml_quoted(self.description)}\n---\n"
        return header + self.content

    def read(self, path: str) -> bytes | None:
        """The bytes of ``SKILL.md`` or of one of the files, or ``None`` if there is none."""
        if path == SKILL_FILE:
            return self.skill_md().encode()
        data = self.files.get(path)
        return data if data is None else _as_bytes(data)

    def layout(self) -> dict[str, bytes]:
        """Every file of the skill's directory by relative path, ``SKILL.md`` first."""
        files = {path: _as_bytes(data) for path, data in self.files.items()}
        return {SKILL_FILE: self.skill_md().encode(), **files}


def _yaml_quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar that reads back the same.

    A JSON string is one (YAML shares its escapes); JSON leaves a few characters raw that YAML
    would fold into a space (NEL, the Unicode line and paragraph separators) or refuse (DEL,
    the C1 controls, U+FFFE/U+FFFF), so those are escaped too. Non-ASCII text stays as it is:
    a ``\\ud83d\\ude00`` surrogate pair would read back as two lone surrogates.
    """
    quoted = json.dumps(text, ensure_ascii=False)
    return _YAML_RAW.sub(lambda m: f"\\u{ord(m[0]):04x}", quoted)


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _as_bytes(data: str | bytes) -> bytes:
    return data.encode() if isinstance(data, str) else data


def check_skills(skills: Sequence[Skill]) -> tuple[Skill, ...]:
    """The skills sorted by name (the one fixed order everything uses).

    Raises:
        SkillFormatError: an entry is not a Skill, or two skills share a name.
    """
    by_name: dict[str, Skill] = {}
    for skill in skills:
        if not isinstance(skill, Skill):
            raise SkillFormatError(f"{skill!r} is not a Skill; make one with hs.Skill(...)")
        if skill.name in by_name:
            raise SkillFormatError(f"two skills are named {skill.name!r}")
        by_name[skill.name] = skill
    return tuple(by_name[name] for name in sorted(by_name))


def parse_skill_md(text: str, where: str) -> tuple[dict[str, Any], str]:
    """Split ``SKILL.md`` into its front matter (a mapping) and its content.

    Raises:
        SkillFormatError: no front matter, invalid YAML, or not a mapping (naming ``where``).
    """
    import yaml  # lazily: only reading skills from disk needs it

    lines = text.removeprefix("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise SkillFormatError(f"{where}: must start with a '---' line (YAML front matter)")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip("\r\n") == "---"), None)
    if end is None:
        raise SkillFormatError(f"{where}: the front matter has no closing '---' line")
    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise SkillFormatError(
            f"{where}: the front matter is not valid YAML{at}: {problem}"
        ) from None
    if not isinstance(meta, dict):
        raise SkillFormatError(f"{where}: the front matter must be a mapping (name: ..., ...)")
    return meta, "".join(lines[end + 1 :]).lstrip("\r\n")


def _read_skill(folder: Path) -> Skill:
    where = os.fspath(folder / SKILL_FILE)
    try:
        text = (folder / SKILL_FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SkillFormatError(
            f"{os.fspath(folder)}: a skill folder needs a {SKILL_FILE}"
        ) from None
    except UnicodeDecodeError:
        raise SkillFormatError(f"{where}: is not UTF-8 text") from None
    meta, content = parse_skill_md(text, where)
    for key in ("name", "description"):
        if not isinstance(meta.get(key), str):
            raise SkillFormatError(f"{where}: the front matter needs {key}: <text>")
    if meta["name"] != folder.name:
        raise SkillFormatError(
            f"{where}: name {meta['name']!r} must match its folder's name {folder.name!r}"
        )
    try:
        return Skill(meta["name"], meta["description"], content, _read_files(folder))
    except SkillFormatError as exc:
        raise SkillFormatError(f"{where}: {exc.message}") from None


def _read_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but ``SKILL.md`` and hidden ones, by relative path."""
    root = os.path.realpath(folder)
    files: dict[str, bytes] = {}
    for current, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in dirs:
            if Path(current, name).is_symlink():
                raise SkillFormatError(
                    f"{Path(current, name)}: a symbolic link to a folder; skill folders are "
                    "read as they are, so copy its files in"
                )
        for name in sorted(n for n in names if not n.startswith(".")):
            full = Path(current, name)
            relative = full.relative_to(folder).as_posix()
            if relative != SKILL_FILE:
                files[relative] = _read_file(full, root)
    return files


def _read_file(full: Path, root: str) -> bytes:
    real = os.path.realpath(full)
    if not real.startswith(root + os.sep):
        raise SkillFormatError(f"{full}: a symbolic link out of its skill folder; copy the file in")
    try:
        return Path(real).read_bytes()
    except OSError as exc:
        raise SkillFormatError(f"{full}: cannot be read ({exc.strerror or exc})") from None


def skills_from_dir(path: str | os.PathLike[str]) -> list[Skill]:
    """Read every skill in ``path``: each folder ``<name>/`` with a ``SKILL.md``, and its files.

    Folders and files whose names start with ``.`` are left out. A symbolic link that points
    out of its skill folder is refused (it would hand a file from elsewhere to the model).

    Returns:
        The skills, sorted by name.

    Raises:
        SkillFormatError: ``path`` is not a folder, or a skill is malformed; the message names
            the file.

    Example::

        skills = hs.skills_from_dir("skills/")          # each folder with a SKILL.md, by name
        agent = hs.Agent(name="coder", model="helix/demo", skills=skills)
    """
    base = Path(path)
    if not base.is_dir():
        raise SkillFormatError(f"{os.fspath(base)}: skills_from_dir needs a folder of skills")
    folders = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    return list(check_skills([_read_skill(folder) for folder in folders]))
