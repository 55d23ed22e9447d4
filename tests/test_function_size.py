"""The package's size rules (the house style's), docstrings counted: no function over 80 lines,
no class over 250, no module over 500, and no function with more than 12 parameters (the front
doors take their options as ``**Unpack[RunKeywords]``, declared once in loop/_options.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_layers import parse_source

PACKAGE = Path(__file__).resolve().parent.parent / "helix_stream"
FUNCTION_LIMIT = 80
CLASS_LIMIT = 250
MODULE_LIMIT = 500
PARAMETER_LIMIT = 12


def _nodes(root: Path) -> list[tuple[Path, ast.AST]]:
    found = []
    for path in sorted(root.rglob("*.py")):
        module = ast.Module(body=parse_source(path.read_text()), type_ignores=[])
        found += [(path, node) for node in ast.walk(module)]
    return found


def _lines(node: ast.AST) -> int:
    return (getattr(node, "end_lineno", None) or node.lineno) - node.lineno + 1  # type: ignore[attr-defined]


def over_limits(root: Path) -> dict[str, int]:
    """``path:name`` (or ``path``) -> lines (or parameters) of everything over a limit."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        if lines > MODULE_LIMIT:
            found[f"{path.relative_to(root)}"] = lines
    for path, node in _nodes(root):
        where = f"{path.relative_to(root)}:{getattr(node, 'name', '')}"
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if _lines(node) > FUNCTION_LIMIT:
                found[where] = _lines(node)
            args = node.args
            count = len(args.posonlyargs + args.args + args.kwonlyargs)
            count -= bool(args.args and args.args[0].arg in ("self", "cls"))
            if count > PARAMETER_LIMIT:
                found[f"{where} (parameters)"] = count
        elif isinstance(node, ast.ClassDef) and _lines(node) > CLASS_LIMIT:
            found[where] = _lines(node)
    return found


def test_nothing_is_over_the_size_limits() -> None:
    assert over_limits(PACKAGE) == {}


def test_the_check_finds_a_long_function_a_long_class_and_a_long_module(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(FUNCTION_LIMIT))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(f"def f():\n{body}\n")
    methods = "\n".join(f"    def m{i}(self):\n        pass\n" for i in range(90))
    (tmp_path / "pkg" / "c.py").write_text(f"class C:\n{methods}\n")
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MODULE_LIMIT + 1))
    params = ", ".join(f"p{i}" for i in range(13))
    (tmp_path / "pkg" / "p.py").write_text(f"def g({params}):\n    pass\n")
    found = over_limits(tmp_path / "pkg")
    assert found["m.py:f"] == 81
    assert found["c.py:C"] == 270 and found["long.py"] == 501
    assert found["p.py:g (parameters)"] == 13
