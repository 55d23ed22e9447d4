"""The user documentation's Python examples (the README and the guides of the docs site), run by
the tests that exercise them."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def doc_section(heading: str) -> str:
    """The text after heading ``heading`` (its words, at any level: ``"## Errors"`` finds
    ``# Errors`` or ``## Errors``) in the README or a page of docs/, up to the end of the file."""
    title = heading.lstrip("#").strip()
    pages = [README, *sorted((ROOT / "docs").rglob("*.md"))]
    for page in pages:
        match = re.search(rf"^#{{1,6}} {re.escape(title)}\n", page.read_text(), re.M)
        if match is not None:
            return page.read_text()[match.end() :]
    raise AssertionError(f"no section {heading!r} in README.md or docs/")


def readme_example(heading: str) -> ModuleType:
    """The first Python block under heading ``heading`` (e.g. ``"## Errors"``) of the README or
    a guide, run as a module."""
    section = doc_section(heading)
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, heading
    module = ModuleType(f"readme_{heading.strip('# ').lower().replace(' ', '_')}")
    exec(compile(match[1], f"docs ({heading})", "exec"), module.__dict__)
    return module
