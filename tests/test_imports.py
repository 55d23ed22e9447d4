"""The package's modules import on their own, in any order.

An import circle works or breaks depending on which module of it is imported first: a test
suite that imports the package one way can pass over one that breaks for a user who imports a
module of the circle first. So every module is imported first, in an interpreter with no
module of the package loaded; ``tests/test_layers.py`` checks that the import statements (all
of them, ``TYPE_CHECKING`` and lazy ones included) draw no circle and follow the layers.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.test_layers import modules

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
    names = sorted(name for name in modules() if name != "helix_stream.__main__")  # the CLI
    assert len(names) > 80  # the package's modules, not an empty glob
    out = subprocess.run(
        [sys.executable, "-c", _FIRST, json.dumps(names)],
        capture_output=True,
        text=True,
        check=True,
        timeout=240,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}
