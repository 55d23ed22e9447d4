"""The API reference covers every public name, each with a docstring (docs/_hooks/reference.py
generates it); the errors page is generated from the error classes."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import helix_stream
from tests.docs._blocks import ROOT


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hook", ROOT / "docs/_hooks/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _hook()
# Modules that are public by name but hold only the package's own seams, with why.
INTERNAL = {
    "helix_stream.loop": "the loop's implementation; its public names are re-exported by helix_stream",
    "helix_stream.session": "the executor's implementation; hs.Executor is the public door",
    "helix_stream.agent": "Agent and StepContextLimits are re-exported by helix_stream; OutputT is Agent's type variable",
    "helix_stream.store.sqlite": "a backend: SQLiteStore is documented in helix_stream.store",
    "helix_stream.store.postgres": "a backend: PostgresStore is documented in helix_stream.store",
}


def _public_modules() -> list[str]:
    found = []
    for info in pkgutil.walk_packages(helix_stream.__path__, "helix_stream."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            found.append(info.name)
    return found


def _documented() -> dict[str, list[str]]:
    """Module -> the names its reference page lists (from the generated pages)."""
    out: dict[str, list[str]] = {}
    for text in HOOK.reference_pages().values():
        for module, name in re.findall(r"^::: ([\w.]+)\.(\w+)$", text, re.M):
            out.setdefault(module, []).append(name)
    return out


def test_every_public_module_has_a_reference_page_or_a_reason() -> None:
    documented = {"helix_stream", "helix_stream.errors", *HOOK.PUBLIC_MODULES}
    top_level_modules = {n for n in helix_stream.__all__ if n == "errors"}
    missing = [
        m
        for m in _public_modules()
        if m not in documented
        and m not in INTERNAL
        and m.rsplit(".", 1)[1] not in top_level_modules
        and not _only_reexports(m, documented)
    ]
    assert missing == []


def _only_reexports(module: str, documented: set[str]) -> bool:
    """A module whose public names are all documented elsewhere (helix_stream.tools, ...)."""
    names = getattr(importlib.import_module(module), "__all__", None)
    if names is None:
        return False
    return all(n in helix_stream.__all__ for n in names)


def test_every_public_name_is_in_the_reference() -> None:
    documented = _documented()
    modules = ["helix_stream", "helix_stream.errors", *HOOK.PUBLIC_MODULES]
    missing = []
    for module in modules:
        names = importlib.import_module(module).__all__
        for name in names:
            if name in ("errors", "__version__"):
                continue
            where = documented.get(module, []) + (
                documented.get("helix_stream.errors", []) if module == "helix_stream" else []
            )
            if name not in where:
                missing.append(f"{module}.{name}")
    assert missing == []


def test_every_public_class_and_function_has_a_docstring() -> None:
    missing = []
    for module, names in _documented().items():
        mod = importlib.import_module(module)
        for name in names:
            obj = getattr(mod, name)
            callable_ = inspect.isclass(obj) or inspect.isfunction(obj)
            if callable_ and not (obj.__doc__ or "").strip():
                missing.append(f"{module}.{name}")
    assert missing == []


def test_the_built_reference_has_an_entry_for_each_name(site: Path) -> None:
    html = "".join(p.read_text() for p in (site / "api").glob("*.html"))
    missing = [
        f"{module}.{name}"
        for module, names in _documented().items()
        for name in names
        if f'id="{module}.{name}"' not in html
    ]
    assert missing == []


def test_the_errors_page_is_the_error_classes(site: Path) -> None:
    errors = importlib.import_module("helix_stream.errors")
    classes = {
        n
        for n in errors.__all__
        if inspect.isclass(getattr(errors, n)) and issubclass(getattr(errors, n), errors.HelixError)
    }
    rows = HOOK.error_rows()
    assert {r[0] for r in rows} == classes
    page = (site / "api/errors.html").read_text()
    for name, code, status, retryable, _meaning, _advice in rows:
        cls = getattr(errors, name)
        assert (code, status, retryable) == (cls.code, cls.http_status, cls.retryable)
        row = re.search(rf"<td><a href=\"#helix_stream\.errors\.{name}\">.*?</tr>", page, re.S)
        assert row is not None, name
        assert f"<code>{code}</code>" in row[0] and f"<td>{status}</td>" in row[0], name


_EXAMPLE = re.compile(r"Example|>>>|::\n")


def _without_example() -> set[str]:
    out = set()
    for module, names in _documented().items():
        mod = importlib.import_module(module)
        for name in names:
            obj = getattr(mod, name)
            callable_ = inspect.isclass(obj) or inspect.isfunction(obj)
            if callable_ and not _EXAMPLE.search(inspect.getdoc(obj) or ""):
                out.add(f"{module}.{name}")
    return out


def test_every_public_name_has_an_example() -> None:
    """Each name of the reference has an example in its docstring (a literal block or doctest
    lines), which tests/docs/test_docstring_examples.py type-checks."""
    assert sorted(_without_example()) == []