"""One version, everywhere it is shown: ``hs.__version__``, the installed metadata (read by
setuptools from ``__version__``), ``helix-stream --version`` and the changelog's newest entry.
Building and installing the wheel and the sdist is ``make package-smoke`` (run by ``.ci/run``)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import helix_stream as hs

ROOT = Path(__file__).resolve().parents[1]


def test_the_version_is_0_3_0_and_the_installed_metadata_says_so() -> None:
    assert hs.__version__ == "0.3.0"
    assert importlib.metadata.version("helix-stream") == hs.__version__


def test_the_console_script_prints_the_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "helix_stream", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == f"helix-stream {hs.__version__}"


def test_the_changelog_opens_with_this_version_and_the_last_release() -> None:
    headings = re.findall(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert headings[:2] == [hs.__version__, "0.2.0"]


def test_litellm_is_pinned_to_a_range_holding_the_installed_release() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    (pin,) = re.findall(r'"litellm>=([\d.]+),<([\d.]+)"', pyproject)
    installed = tuple(int(p) for p in importlib.metadata.version("litellm").split(".")[:3])
    low, high = (tuple(int(p) for p in v.split(".")) for v in pin)
    assert low <= installed < high
