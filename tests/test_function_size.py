"""No function of the package runs past 80 lines (the house style's limit; docstrings count)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import parse_source

PACKAGE = Path(__file__).resolve().parent.parent / "helix_stream"
LIMIT = 80


def long_functions(root: Path) -> list[str]:
    """``path:name (lines)`` for each function under ``root`` longer than the limit."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = ast.Module(body=parse_source(path.read_text()), type_ignores=[])
        for node in ast.walk(module):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > LIMIT:
                    found.append(f"{path.relative_to(root.parent)}:{node.name} ({lines})")
    return found


def test_no_function_runs_past_80_lines() -> None:
    assert long_functions(PACKAGE) == []


def test_the_check_finds_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(f"def f():\n{body}\n")
    assert long_functions(tmp_path / "pkg") == ["pkg/m.py:f (81)"]
