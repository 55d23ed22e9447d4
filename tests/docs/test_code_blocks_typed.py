"""``mypy --strict`` passes on the Python blocks of the README and the docs site (issue 33).

Every block that is run (no mark) or checked by a test (``checked-by``) is type-checked as a
user's editor would see it: a page's run blocks form one module, in order, as
tests/docs/test_code_blocks.py runs them in one namespace; a ``checked-by`` block is a module of
its own. Fragments (placeholders, a real provider) are not checked. Top-level ``await``,
``async for`` and ``async with`` are allowed, as in a notebook or an async REPL, which is how
the run blocks are run: a page's module is the body of one coroutine.
"""

from __future__ import annotations

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


def _modules(folder: Path) -> dict[Path, str]:
    """The module files to check, each with the page (and line) it came from."""
    modules: dict[Path, str] = {}
    for number, page in enumerate(pages()):
        checked = [b for b in blocks(page) if b.lang in PYTHON and b.mark in (None, "checked-by")]
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
    return modules


def test_the_run_and_checked_blocks_type_check_strictly(tmp_path: Path) -> None:
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
