"""``mypy --strict`` passes on the Python blocks of the README and the docs site (issue 33).

Every block that is run (no mark) or checked by a test (``checked-by``) is type-checked as a
user's editor would see it: a page's run blocks form one module, in order, as
tests/docs/test_code_blocks.py runs them in one namespace; a ``checked-by`` block is a module of
its own. A fragment (it needs a real provider, an OAuth app, the reader's own names) is not run
but is checked too, as a module of its own: each name it uses and does not define is imported
from tests/docs/_given.py, where the reader's placeholders are declared with their types. Top-level ``await``,
``async for`` and ``async with`` are allowed, as in a notebook or an async REPL, which is how
the run blocks are run: a page's module is the body of one coroutine.
"""

from __future__ import annotations

import ast
import builtins
import shutil
import textwrap
from pathlib import Path

from tests.docs._blocks import PYTHON, ROOT, Block, blocks, pages
from tests.test_typing import run_mypy

_OPTIONS = ("--disable-error-code", "top-level-await")  # a checked-by block may await


def _as_async_body(run: list[Block]) -> str:
    """The page's run blocks as the body of one coroutine: mypy refuses ``async for`` and
    ``async with`` at a module's top level, which the docs runner allows."""
    body = "".join(f"# {b.where}\n{b.code}" for b in run)
    return "async def page() -> None:\n" + textwrap.indent(body, "    ")


def _bound(tree: ast.AST) -> set[str]:
    """The names a block defines itself: assigned, imported, a def or class, a parameter."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _given_names(code: str) -> list[str]:
    """The names a fragment uses without defining them: the reader's, from ``_given``."""
    tree = ast.parse(code)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return sorted(used - _bound(tree) - set(dir(builtins)))


def _as_fragment_module(block: Block) -> str:
    needed = _given_names(_as_async_body([block]))
    head = f"from _given import {', '.join(needed)}\n\n" if needed else ""
    return head + _as_async_body([block])


def _modules(folder: Path) -> dict[Path, str]:
    """The module files to check, each with the page (and line) it came from."""
    modules: dict[Path, str] = {}
    for number, page in enumerate(pages()):
        checked = [b for b in blocks(page) if b.lang in PYTHON and b.mark != "run-shell"]
        run = [b for b in checked if b.mark is None]
        if run:
            module = folder / f"page_{number}.py"
            module.write_text(_as_async_body(run))
            modules[module] = page.relative_to(ROOT).as_posix()
        for block in checked:
            if block.mark == "checked-by":
                module = folder / f"page_{number}_line_{block.line}.py"
                module.write_text(block.code)
                modules[module] = block.where
            elif block.mark == "fragment":
                module = folder / f"page_{number}_fragment_{block.line}.py"
                module.write_text(_as_fragment_module(block))
                modules[module] = block.where
    shutil.copy(Path(__file__).with_name("_given.py"), folder / "_given.py")
    return modules


def test_every_python_block_type_checks_strictly(tmp_path: Path) -> None:
    modules = _modules(tmp_path)
    assert len(modules) >= 10, modules  # the pages are there and read
    done = run_mypy(*modules, options=_OPTIONS)
    report = done.stdout + done.stderr
    for module, where in modules.items():
        report = report.replace(str(module), f"{module.name} ({where})")
    assert done.returncode == 0, report


def test_a_block_that_does_not_type_check_fails(tmp_path: Path) -> None:
    # The check can fail: an untyped function, as a reader might paste it, is reported.
    probe = tmp_path / "probe.py"
    probe.write_text("def reply(text):\n    return text\n")
    done = run_mypy(probe, options=_OPTIONS)
    assert done.returncode == 1 and "no-untyped-def" in done.stdout


def test_a_fragment_takes_only_the_declared_given_names(tmp_path: Path) -> None:
    # A fragment's undefined names come from _given; one declared nowhere is reported, and a
    # wrong type against the package's signatures is too.
    fragment = Block(
        path=ROOT / "README.md",
        line=1,
        lang="python",
        code="agent = hs.Agent(name=1, model='helix/demo')\nprint(undeclared_name)\n",
        mark="fragment",
        reason="a probe",
    )
    probe = tmp_path / "probe.py"
    probe.write_text(_as_fragment_module(fragment))
    shutil.copy(Path(__file__).with_name("_given.py"), tmp_path / "_given.py")
    done = run_mypy(probe, options=_OPTIONS)
    assert done.returncode == 1
    assert "undeclared_name" in done.stdout and "arg-type" in done.stdout, done.stdout
