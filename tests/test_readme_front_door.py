"""The front-door examples of the guides run ("Strict keywords, typed results, sync calls" in
getting started, and the serving guide's "Options"); ``tests/test_typing.py`` type-checks them
with ``mypy --strict``."""

from __future__ import annotations

import re
from types import ModuleType
from typing import Any

import pytest

from tests._readme import doc_section

SECTIONS = ("### Strict keywords, typed results, sync calls", "### Options")


def readme_block(heading: str) -> str:
    """The first Python code block under ``heading`` (in the README or a guide)."""
    section = doc_section(heading)
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, heading
    return match[1]


def run_block(heading: str) -> ModuleType:
    module = ModuleType("readme_example")
    exec(compile(readme_block(heading), f"docs ({heading})", "exec"), module.__dict__)
    return module


def test_the_strict_and_sync_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    example = run_block(SECTIONS[0])
    printed = capsys.readouterr().out
    assert "did you mean `tools_context`?" in printed
    assert example.chunks.text and len(example.chunks.steps) == 1


def test_the_server_options_example_builds_the_app() -> None:
    example = run_block(SECTIONS[1])
    options: Any = example.options
    assert (options.client_version, options.on_disconnect) == (6, "cancel")
    assert {getattr(r, "path", None) for r in example.app.routes} >= {"/api/chat", "/context"}
