"""The package's modules import on their own, in any order, and import no circle.

An import circle works or breaks depending on which module of it is imported first: a test
suite that imports the package one way can pass over one that breaks for a user who imports a
module of the circle first. So (a) every module is imported first, in an interpreter with no
module of the package loaded, and (b) the modules' import statements (those that run at import
time: not the ones under ``TYPE_CHECKING``, not the ones inside functions) draw no circle.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "helix_stream"


def parse_source(source: str) -> list[ast.stmt]:
    """A module's statements, parsed again if CPython 3.11's shared AST state was disturbed.

    CPython 3.11 keeps the AST converter's recursion counter in process-wide state; a thread
    of an earlier test that builds ASTs at the same moment (a server thread compiling, say)
    can make ``ast.parse`` raise "AST constructor recursion depth mismatch" (fixed in 3.12).
    The parse itself is deterministic, so a second try answers what the first one would have.
    """
    for attempt in range(5):
        try:
            return ast.parse(source).body
        except SystemError:
            if attempt == 4:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue  # running it is the CLI
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that importing ``module`` imports, by its top-level statements."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.ImportFrom):
                target = node.module or ""
                if node.level:
                    base = module.split(".")[: None if is_package else -1]
                    base = base[: len(base) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in modules else target)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                visit(node.body)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "orelse", []))

    visit(parse_source(path.read_text()))
    out = set()
    for name in found:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            # Importing a.b.c imports a and a.b first; a module's own packages are already
            # being imported when it is.
            prefix = ".".join(parts[:end])
            if prefix in modules and prefix != module and not module.startswith(f"{prefix}."):
                out.add(prefix)
    return out


def _circle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (circle := walk(nxt)) is not None:
                return circle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (circle := walk(node)) is not None:
            return circle
    return None


def test_the_import_statements_draw_no_circle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _circle(graph) is None
    # The check finds one: a module that imports the one importing it.
    assert _circle({**graph, "helix_stream.chunks": {"helix_stream.steps"}}) is not None


_FIRST = """
import importlib, json, sys
failed = {}
for name in json.loads(sys.argv[1]):
    for loaded in [m for m in sys.modules if m == "helix_stream" or m.startswith("helix_stream.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    names = sorted(_modules())
    assert len(names) > 80  # the package's modules, not an empty glob
    out = subprocess.run(
        [sys.executable, "-c", _FIRST, json.dumps(names)],
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}
