"""The README's Python examples, run by the tests that exercise them."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_example(heading: str) -> ModuleType:
    """The first Python block under README heading ``heading`` (e.g. ``"## Errors"``), run as
    a module."""
    section = README.read_text().split(f"\n{heading}\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, heading
    module = ModuleType(f"readme_{heading.strip('# ').lower().replace(' ', '_')}")
    exec(compile(match[1], f"README.md ({heading})", "exec"), module.__dict__)
    return module
