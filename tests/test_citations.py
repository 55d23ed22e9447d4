"""Every citation in the repository points at something in it.

Code, docstrings, comments and docs cite only what the repository holds: README sections,
``docs/`` files and their sections, files, modules. This reads every source and documentation
file and fails on a citation of

* a file that is not there: a path under ``helix_stream/``, ``tests/``, ``bench/``,
  ``examples/``, ``docs/`` or ``.ci/``, or a Markdown file by name;
* a README section that is no heading of the README or of a guide of the docs site
  (``README, "..."``, ``README's "..."``), or a section of
  a ``docs/`` file that is none (``docs/<file>.md, "..."``). A citation names the heading, or
  its part before a colon ("Prompt caching" for "Prompt caching: `prompt_cache`");
* an anchor (``[...](#...)``) or a relative link (``[...](path)``) of a Markdown file that
  leads nowhere;
* a module of the package that does not exist (``helix_stream.<module>``), or a name it
  does not define;
* a document that is not in the repository at all (a numbered reference document).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SCANNED_DIRS = ("helix_stream", "tests", "bench", "examples", "docs", ".ci")
_SCANNED_FILES = ("README.md", "Makefile", "pyproject.toml")
_SUFFIXES = {".py", ".md", ".mjs", ".js", ".html", ".toml", ".txt", ".cfg", ""}
_SKIPPED = {"__pycache__", "node_modules", ".venv", ".mypy_cache", ".ruff_cache"}

# Reference documents the design was written from live outside the repository: a citation
# of one says nothing to a reader of the repository.
_OUTSIDE = re.compile(r"\bReference\s+0\d\d\b|/work/shared|\.\./shared|\.\./reference")

# A path: a file with its extension, or a folder with its slash (not "bench/fast", a model).
_PATH = re.compile(
    r"(?<![\w/.-])((?:helix_stream|tests|bench|examples|docs|\.ci)/(?:[\w.-]+/)*(?:[\w-]+\.\w+)?)"
)
_MD_NAME = re.compile(r"(?<![\w/.-])([\w-]+\.md)\b")
# Markdown names that are data, not citations: the file every skill folder holds (the skills
# format's own name), and a name written as a Python string value ("notes.md").
_DATA_MD = frozenset({"SKILL.md"})
_QUOTED = re.compile(r"""(['"])[\w/.-]*\.md\1""")
_README = re.compile(r"README(?:,|'s)\s+\"([^\"]+)\"")
_DOC_SECTION = re.compile(r"(docs/[\w.-]+\.md),\s+\"([^\"]+)\"")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# A cross-reference of a docstring (:mod:`helix_stream.x`, :class:`~helix_stream.x.Y`).
_MODULE = re.compile(r":(?:mod|class|func|meth|data|attr|exc):`~?(helix_stream(?:\.\w+)+)`")


def _files() -> Iterator[Path]:
    for name in _SCANNED_FILES:
        yield ROOT / name
    for top in _SCANNED_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if _SKIPPED & set(path.relative_to(ROOT).parts) or not path.is_file():
                continue
            if path.suffix in _SUFFIXES and path != Path(__file__).resolve():
                yield path


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _headings(path: Path) -> list[str]:
    """A Markdown file's headings (outside code blocks), as written."""
    out, fenced = [], False
    for line in _text(path).splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            out.append(line.lstrip("#").strip())
    return out


def _plain(text: str) -> str:
    """A heading or a quoted citation as words: no Markdown marks, no line breaks or comment
    marks between its words."""
    text = re.sub(r"\s*\n\s*(?:#\s*)?", " ", text)
    return re.sub(r"[`*]", "", text).strip().casefold()


def _names(path: Path) -> set[str]:
    names = set()
    for heading in _headings(path):
        names.add(_plain(heading))
        names.add(_plain(heading.split(":")[0]))
    return names


@functools.cache
def _user_doc_names() -> frozenset[str]:
    """The sections a "README" citation may name: the README is a front page, and the sections
    that were its own live on in the guides of the docs site (docs/guides/, docs/migration/)."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*/*.md"))]
    return frozenset(name for page in pages for name in _names(page))


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub makes for a Markdown file's headings."""
    seen: dict[str, int] = {}
    out = set()
    for heading in _headings(path):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _module_problem(dotted: str) -> str | None:
    """Why ``helix_stream.a.b.c`` names nothing, or ``None``."""
    path, parts = ROOT / "helix_stream", dotted.split(".")[1:]
    for i, part in enumerate(parts):
        if (path / part).is_dir():
            path = path / part
            continue
        source = path / "__init__.py"
        if (path / f"{part}.py").is_file():
            if i + 1 == len(parts):
                return None
            source, part = path / f"{part}.py", parts[i + 1]
        if not re.search(rf"\b{re.escape(part)}\b", _text(source)):
            return f"{dotted} does not exist"
        return None
    return None


def _problems(path: Path, rel: str, known_md: set[str]) -> Iterator[str]:
    text = _text(path)
    readme_names = _user_doc_names()
    for match in _OUTSIDE.finditer(text):
        yield f"{rel}:{_line(text, match.start())}: cites {match.group(0)!r}"
    for match in _PATH.finditer(text):
        cited = match.group(1)
        if not (ROOT / cited).exists():
            yield f"{rel}:{_line(text, match.start())}: no file {cited}"
    values = {m.start() + 1 for m in _QUOTED.finditer(text)} if rel.endswith(".py") else set()
    for match in _MD_NAME.finditer(text):
        if match.group(1) in _DATA_MD or match.start() in values:
            continue
        if match.group(1) not in known_md:
            yield f"{rel}:{_line(text, match.start())}: no document {match.group(1)}"
    for match in _README.finditer(text):
        if _plain(match.group(1)) not in readme_names:
            yield f'{rel}:{_line(text, match.start())}: no README section "{match.group(1)}"'
    for match in _DOC_SECTION.finditer(text):
        doc, section = ROOT / match.group(1), match.group(2)
        if doc.is_file() and _plain(section) not in _names(doc):
            yield f'{rel}:{_line(text, match.start())}: no section "{section}" in {doc.name}'
    for match in _MODULE.finditer(text):
        problem = _module_problem(match.group(1))
        if problem is not None:
            yield f"{rel}:{_line(text, match.start())}: {problem}"
    if path.suffix == ".md":
        yield from _link_problems(path, text, rel)


def _link_problems(path: Path, text: str, rel: str) -> Iterator[str]:
    for match in _LINK.finditer(text):
        target = match.group(1)
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if linked.parent == ROOT / "docs" / "api":
            continue  # generated by docs/_hooks/reference.py; `mkdocs build --strict` checks them
        if not linked.exists():
            yield f"{rel}:{_line(text, match.start())}: link to a missing {file}"
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            yield f"{rel}:{_line(text, match.start())}: no heading for #{anchor}"


def test_every_citation_points_at_something_in_the_repository() -> None:
    known_md = {p.name for p in ROOT.rglob("*.md") if not _SKIPPED & set(p.parts)}
    problems = [
        problem
        for path in _files()
        for problem in _problems(path, path.relative_to(ROOT).as_posix(), known_md)
    ]
    assert problems == []


def test_the_check_finds_what_it_is_for(tmp_path: Path) -> None:
    # The checker itself, on a file of bad citations: each kind is reported.
    bad = tmp_path / "probe.md"
    bad.write_text(
        "# Probe\n\nSee [x](#no-such-heading), [y](docs/missing.md), docs/missing.md,\n"
        'README, "No Such Section", docs/postgres.md, "No such part",\n'
        ":mod:`helix_stream.context._no_such_module`, ai-sdk-protocol.md, Reference 000.\n"
        'Fine: [p](#probe), README, "Durable sessions", docs/postgres.md, "Tables".\n'
    )
    found = list(_problems(bad, "probe.md", {"README.md", "postgres.md"}))
    assert [p for p in found if p.startswith("probe.md:6:")] == []  # the good ones pass
    kinds = [
        "no heading for #no-such-heading",
        "link to a missing docs/missing.md",
        "no file docs/missing.md",
        'no README section "No Such Section"',
        'no section "No such part" in postgres.md',
        "helix_stream.context._no_such_module does not exist",
        "no document ai-sdk-protocol.md",
        "cites 'Reference 000'",
    ]
    for kind in kinds:
        assert any(kind in problem for problem in found), (kind, found)


def test_the_readme_has_each_heading_once() -> None:
    headings = _headings(ROOT / "README.md")
    assert sorted(h for h in set(headings) if headings.count(h) > 1) == []
