"""The package's layers (docs/architecture.md, "The layers"): no import points up a layer, and
no import closes a circle.

Every import statement counts, wherever it is: at module level, under ``TYPE_CHECKING``, or
inside a function (a lazy import is still a dependency, only a later one). Importing
``a.b.c`` runs ``a/b/__init__.py`` first, so it depends on that package too (its
``__init__`` re-exports its submodules): a module of another package that names one
submodule depends on all of them. A module's own enclosing packages are not counted (they
are already being imported when it is).
"""

from __future__ import annotations

import ast
import time
from collections.abc import Mapping
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "helix_stream"

# Bottom to top; a module may import from its own layer and the ones below. The name is the
# first part of the module's path under helix_stream/ (a file or a subpackage).
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "vocabulary",
        frozenset(
            {
                "errors",
                "_cleanup",
                "_public_home",
                "_messages",
                "_json_schema",
                "_limits",
                "_result_size",
                "_media",
                "prepare_step",
                "state",
                "_token",
                "_auth_strategy",
                "_sandbox_protocol",
                "_tool_context",
                "tools",
                "chunks",
                "steps",
                "_event_stream",
                "_step_parts",
                "_cache_ledger",
                "_timeout",
                "_transform",
                "_sync",
                "_usage_limits",
            }
        ),
    ),
    ("foundations", frozenset({"models", "middleware", "context", "store", "telemetry"})),
    ("providers", frozenset({"auth", "sandbox", "mcp", "_tool_source", "hooks"})),
    ("loop", frozenset({"loop", "agent", "transformers"})),
    ("session", frozenset({"session"})),
    ("server", frozenset({"server", "testing", "__main__"})),
)


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


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """The package's modules by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(module: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """The package's modules that ``module`` imports, by every import statement in it."""
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.Module(body=parse_source(path.read_text()), type_ignores=[])):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    out = set()
    for name in found:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            # Importing a.b.c imports a and a.b first.
            prefix = ".".join(parts[:end])
            if prefix in known and prefix != module and not module.startswith(f"{prefix}."):
                out.add(prefix)
    return out


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    found = modules(package)
    return {name: imports(name, path, found) for name, path in found.items()}


def layer(module: str) -> int:
    """The layer of ``module`` (a ``KeyError`` for a module no layer lists)."""
    parts = module.split(".")
    if len(parts) == 1:
        return len(LAYERS)  # the package itself: its lazy re-exports sit on top
    for number, (_, names) in enumerate(LAYERS):
        if parts[1] in names:
            return number
    raise KeyError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")


def upward(edges: Mapping[str, set[str]]) -> list[str]:
    """Every import that points up a layer, as ``"a -> b"``."""
    return [
        f"{source} ({LAYERS[layer(source)][0]}) -> {target} ({LAYERS[layer(target)][0]})"
        for source in sorted(edges)
        if layer(source) < len(LAYERS)
        for target in sorted(edges[source])
        if layer(target) > layer(source)
    ]


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next((t for t in targets if t in edges), None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_is_in_a_layer() -> None:
    edges = graph()
    assert len(edges) > 80  # the package's modules, not an empty glob
    for module in edges:
        layer(module)


def test_no_import_points_up_a_layer() -> None:
    assert upward(graph()) == []


def test_no_import_closes_a_circle() -> None:
    assert circles(graph()) == []


def _planted(tmp_path: Path, files: Mapping[str, str]) -> dict[str, set[str]]:
    root = tmp_path / "helix_stream"
    for name, text in {"__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return graph(root)


def test_the_checker_finds_a_planted_upward_import(tmp_path: Path) -> None:
    edges = _planted(
        tmp_path,
        {
            "errors.py": "",
            "state.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .session._turn import run_turn\n"
            ),
            "session/__init__.py": "",
            "session/_turn.py": "from ..errors import HelixError\n",
        },
    )
    assert upward(edges) == [
        "helix_stream.state (vocabulary) -> helix_stream.session (session)",
        "helix_stream.state (vocabulary) -> helix_stream.session._turn (session)",
    ]
    assert circles(edges) == []


def test_the_checker_finds_a_planted_circle(tmp_path: Path) -> None:
    # A lazy import inside a function, through a package's __init__ re-export.
    edges = _planted(
        tmp_path,
        {
            "steps.py": "def f():\n    from .chunks import Chunk\n",
            "chunks.py": "from .auth._token import Token\n",
            "auth/__init__.py": "from ._flow import Flow\n",
            "auth/_token.py": "",
            "auth/_flow.py": "from .. import steps\n",
        },
    )
    assert circles(edges) == [
        [
            "helix_stream.auth",
            "helix_stream.auth._flow",
            "helix_stream.chunks",
            "helix_stream.steps",
        ]
    ]
    assert "helix_stream.chunks (vocabulary) -> helix_stream.auth (providers)" in upward(edges)
