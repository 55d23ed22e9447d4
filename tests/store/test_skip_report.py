"""A run that cannot reach PostgreSQL says so loudly at its end, never silently."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_skipped_postgres_tests_end_the_run_with_a_loud_line() -> None:
    env = {
        **os.environ,
        "HELIX_TEST_POSTGRES_DSN": "postgresql://postgres@127.0.0.1:1/test",  # nothing listens
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "memory or postgres",
         "tests/store/test_turn_contract.py::test_a_snapshot_of_no_session_is_empty"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 skipped" in out.stdout
    summary = out.stdout[out.stdout.index("POSTGRES TESTS SKIPPED") :]
    assert "1 PostgresStore test did not run" in summary
    assert "PostgreSQL not reachable at postgresql://postgres@127.0.0.1:1/test" in summary
