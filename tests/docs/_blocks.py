"""The code blocks of the README and the docs site, and how each one is checked.

A block is checked by what the HTML comment on the line before it says:

* no comment (Python): run by tests/docs/test_code_blocks.py, the page's blocks in order in one
  namespace (a later block may use what an earlier one defined), against the embedded demo
  model, ``helix_stream.testing.ScriptedModel`` or a loopback server — never the network;
* ``<!-- checked-by: tests/<file>.py -->``: a test in that file runs it (the file must exist and
  read the page);
* ``<!-- run-shell -->``: a shell block run by the docs test, in the repository's root;
* ``<!-- fragment: <reason> -->``: not run, for the reason given, but type-checked when it is
  Python (tests/docs/_given.py declares the reader's names it uses) (a reader's placeholder, a real
  provider, a server that keeps running, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell", "console"}
_FENCE = re.compile(r"^(`{3,})([\w-]*)[^\n]*$")
_MARK = re.compile(r"^<!--\s*(fragment|checked-by|run-shell)\s*:?\s*(.*?)\s*-->$")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block: where it is, its language, its code and its mark."""

    path: Path
    line: int
    lang: str
    code: str
    mark: str | None  # "fragment", "checked-by", "run-shell" or None
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def pages() -> list[Path]:
    """The README and every page of the site."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_hooks" not in p.parts)
    return [ROOT / "README.md", *docs]


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of one Markdown file, in order."""
    lines = path.read_text().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, lang, start = match[1], match[2].lower(), i
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1
        prev = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        mark = _MARK.match(prev)
        out.append(
            Block(
                path=path,
                line=start + 1,
                lang=lang,
                code="\n".join(body) + "\n",
                mark=mark[1] if mark else None,
                reason=mark[2] if mark else "",
            )
        )
    return out


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]
