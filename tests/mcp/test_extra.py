"""The ``mcp`` extra: optional, imported only when a server connects, skipped when absent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.errors import FrameworkNotSupportedError

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_package_and_its_mcp_names_does_not_import_the_mcp_package() -> None:
    code = (
        "import sys, helix_stream as hs; hs.MCPServer; import helix_stream.mcp;"
        "print(sorted(m for m in ('mcp', 'httpx2', 'litellm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_without_the_mcp_package_a_server_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import helix_stream.mcp._server as server_module

    monkeypatch.setattr(server_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FrameworkNotSupportedError, match=r"pip install 'helix-stream\[mcp\]'"):
        hs.MCPServer.stdio("python", ["server.py"], name="weather")


def test_without_the_mcp_package_the_mcp_tests_are_skipped_saying_why(tmp_path: Path) -> None:
    fake = tmp_path / "mcp"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError('No module named mcp', name='mcp')\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "tests/mcp/test_telemetry.py", "tests/mcp/test_offer.py"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=240,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the MCP tests need the mcp package: pip install 'helix-stream[mcp]'" in proc.stdout
    assert "21 passed, 1 skipped" in proc.stdout  # the pure offer tests still run
