"""The front door's types, as a user's ``mypy --strict`` sees them (issue 33, "Types all the
way"): ``tests/typing_cases/typed.py`` passes (``assert_type`` on tools, contexts, outputs and
callback events, hook events), every file of ``examples/`` passes, and every line of ``tests/typing_cases/refused.py`` is refused with the error
its ``# type: ignore[...]`` names (``--warn-unused-ignores`` fails on one that is not)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "typing_cases"


def run_mypy(*files: Path, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """One ``mypy --strict`` process over ``files``, with the package's own configuration."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--warn-unused-ignores",
            *options,
            *map(str, files),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_users_types_flow_through_and_mistakes_are_refused(tmp_path: Path) -> None:
    # The README's front-door examples too (tests/test_readme_front_door.py runs them).
    from tests.test_readme_front_door import SECTIONS, readme_block

    blocks = []
    for number, heading in enumerate(SECTIONS):
        blocks.append(tmp_path / f"readme_{number}.py")
        blocks[-1].write_text(readme_block(heading))
    done = run_mypy(CASES / "typed.py", CASES / "refused.py", *blocks)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_example_type_checks_strictly() -> None:
    examples = sorted((ROOT / "examples").rglob("*.py"))
    assert len(examples) >= 5, examples  # the folder is there and read
    done = run_mypy(*examples)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_refused_line_that_type_checks_fails_the_check(tmp_path: Path) -> None:
    # The check can fail: an ignore on a line mypy accepts is reported.
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import helix_stream as hs\n"
        'hs.stream_text(model="helix/demo", tools_context={})  # type: ignore[call-arg]\n'
    )
    done = run_mypy(probe)
    assert done.returncode == 1 and 'Unused "type: ignore" comment' in done.stdout
