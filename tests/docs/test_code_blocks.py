"""Every code block of the README and the docs site is checked (tests/docs/_blocks.py says how).

Python blocks with no mark run, page by page, with no network; a block marked
``checked-by`` names a test file that exists and reads its page; a ``fragment`` gives a reason;
a ``run-shell`` block runs. A shell block a newcomer runs has one of these marks too.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs._blocks import PYTHON, ROOT, SHELL, all_blocks, blocks, pages
from tests.docs._runner import compile_blocks, run_blocks

_RUN_PAGES = [p for p in pages() if any(b.lang in PYTHON and b.mark is None for b in blocks(p))]


@pytest.mark.parametrize("page", _RUN_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
async def test_the_python_blocks_of_a_page_run(page: Path, tmp_path: Path) -> None:
    runnable = [b for b in blocks(page) if b.lang in PYTHON and b.mark is None]
    await asyncio.to_thread(run_blocks, compile_blocks(runnable), str(tmp_path))


def test_every_block_is_run_checked_or_a_fragment_with_a_reason() -> None:
    problems = []
    for block in all_blocks():
        if block.mark == "fragment" and not block.reason:
            problems.append(f"{block.where}: a fragment needs a reason")
        if block.lang in SHELL and block.mark is None:
            problems.append(f"{block.where}: a shell block needs run-shell, checked-by or fragment")
        if block.mark == "checked-by":
            test = ROOT / block.reason
            page = block.path.relative_to(ROOT).as_posix()
            if not test.is_file():
                problems.append(f"{block.where}: {block.reason} does not exist")
            elif not _reads(test.read_text(), page, block.code):
                problems.append(f"{block.where}: {block.reason} does not read {page}")
    assert problems == []


def _reads(test: str, page: str, code: str) -> bool:
    """Whether a test reads the page, or runs the example file the block runs."""
    examples = re.findall(r"examples/(\w+)\.py", code)
    return (
        page in test
        or Path(page).stem in test
        or (bool(examples) and all(f'"{name}"' in test for name in examples))
    )


_SHELL = [b for b in all_blocks() if b.mark == "run-shell"]


@pytest.mark.parametrize("block", _SHELL, ids=lambda b: b.where)
def test_a_run_shell_block_runs(block: object) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.code],  # type: ignore[attr-defined]
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
