"""The examples in the public docstrings (the API reference's code) pass ``mypy --strict``.

The reference pages of the site are generated from the docstrings, so their examples are code a
reader copies like any guide's. Each public name's docstring example — the literal block after a
line ending in ``::``, or its ``>>>`` lines — is checked as a module of its own, the way
tests/docs/test_code_blocks_typed.py checks a guide's fragment: the reader's own names it uses
(``executor``, ``agent``, ``check_caller``...) come typed from tests/docs/_given.py, and ``await``
is allowed at the top, as in an async REPL. A name of the documented module itself (the page the
example is on) needs no import, as in a doctest of that module.
"""

from __future__ import annotations

import importlib
import inspect
import re
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.docs._blocks import ROOT, Block
from tests.docs.test_code_blocks_typed import _OPTIONS, _as_async_body, _given_names
from tests.docs.test_reference import _documented
from tests.test_typing import run_mypy

_LITERAL = re.compile(r"::\s*$")
_PROMPT = re.compile(r"^\s*(>>>|\.\.\.) ?")


@dataclass(frozen=True, slots=True)
class Example:
    """One docstring example: whose it is, and its code."""

    module: str
    name: str
    code: str

    def as_module(self) -> str:
        """The example as a module: its undefined names from its own module, else from
        ``_given``.

        Raises:
            SyntaxError: the example is not Python.
        """
        body = _as_async_body([Block(ROOT / "README.md", 0, "python", self.code, "fragment", "")])
        own = importlib.import_module(self.module)
        needed = _given_names(body)
        local = [n for n in needed if n in getattr(own, "__all__", ())]
        given = [n for n in needed if n not in local]
        head = f"from {self.module} import {', '.join(local)}\n" if local else ""
        head += f"from _given import {', '.join(given)}\n" if given else ""
        return head + "\n" + body


def _literal_blocks(doc: str) -> list[str]:
    """The indented blocks after a line ending in ``::`` (reST literal blocks)."""
    lines = doc.splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if not _LITERAL.search(line):
            continue
        indent = len(line) - len(line.lstrip())
        body: list[str] = []
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        code = textwrap.dedent("\n".join(body)).strip("\n")
        if code and not code.startswith(">>>"):  # a doctest: read by _doctest_code
            out.append(code + "\n")
    return out


def _doctest_code(doc: str) -> str:
    """The ``>>>`` lines of a docstring and the ``...`` lines that continue them, without their
    prompts (outputs left out)."""
    lines: list[str] = []
    continuing = False
    for line in doc.splitlines():
        starts = line.lstrip().startswith(">>>")
        continuing = starts or (continuing and line.lstrip().startswith("..."))
        if continuing:
            lines.append(_PROMPT.sub("", line, count=1))
    return textwrap.dedent("\n".join(lines)) + "\n" if lines else ""


def examples() -> list[Example]:
    """Every public name's docstring examples."""
    found: list[Example] = []
    for module, names in _documented().items():
        mod = importlib.import_module(module)
        for name in names:
            doc = inspect.getdoc(getattr(mod, name)) or ""
            codes = [*_literal_blocks(doc), _doctest_code(doc)]
            found += [Example(module, name, code) for code in codes if code.strip()]
    return found


def test_the_docstring_examples_type_check_strictly(tmp_path: Path) -> None:
    modules: dict[Path, str] = {}
    not_python: list[str] = []
    for number, example in enumerate(examples()):
        module = tmp_path / f"example_{number}.py"
        try:
            module.write_text(example.as_module())
        except SyntaxError as exc:
            not_python.append(f"{example.module}.{example.name}: {exc.msg}: {exc.text}")
            continue
        modules[module] = f"{example.module}.{example.name}"
    assert not_python == []
    assert len(modules) >= 50, sorted(modules.values())  # the docstrings are there and read
    shutil.copy(Path(__file__).with_name("_given.py"), tmp_path / "_given.py")
    done = run_mypy(*modules, options=_OPTIONS)
    report = done.stdout + done.stderr
    for module, name in modules.items():
        report = report.replace(str(module), f"{module.name} ({name})")
    assert done.returncode == 0, report


def test_an_example_is_read_from_a_literal_block_and_from_doctest_lines() -> None:
    doc = "Summary.\n\nExample::\n\n    x = 1\n    ...\n\nMore text.\n\n>>> z = 2\n>>> z\n2\n"
    assert _literal_blocks(doc) == ["x = 1\n...\n"]
    assert _doctest_code(doc) == "z = 2\nz\n"
