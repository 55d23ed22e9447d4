"""The README's container-backed provider keeps the protocol's shape (docker itself is not run:
there is no docker engine here; this only checks the example is code that fits)."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

import helix_stream as hs
from tests._readme import doc_section


def load_example() -> ModuleType:
    section = doc_section("## A container-backed provider (an example, not shipped)")
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    module = ModuleType("readme_docker_example")
    exec(
        compile(match[1], "docs/guides/sandboxes-skills.md (container example)", "exec"),
        module.__dict__,
    )
    return module


def test_the_readme_container_provider_fits_the_protocols() -> None:
    example = load_example()
    assert isinstance(example.DockerSandboxes(), hs.SandboxProvider)
    sandbox = example.DockerSandbox("helix-abc")
    assert isinstance(sandbox, hs.Sandbox)
    assert sandbox.id == "helix-abc"
    assert sandbox.resolve_path("app//./main.py") == "/workspace/app/main.py"
    with pytest.raises(hs.SandboxPathError):
        sandbox.resolve_path("/workspace/../etc/passwd")
