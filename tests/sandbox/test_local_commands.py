"""LocalSandbox commands: real processes in a temp dir (exit codes, output, env, timeout, cancel)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.sandbox import WORKSPACE, LocalSandboxSession
from helix_stream.sandbox._confine import confinement
from tests.sandbox._util import running, session

# A command killed by signal N: -N on the host, 128 + N inside a namespace (as a shell says).
KILLED_BY_9 = -9 if confinement() == "none" else 128 + 9


async def make(root: Path, **options: object) -> LocalSandboxSession:
    return await hs.LocalSandbox(root, **options).create(session(), "coder")  # type: ignore[arg-type]


async def wait_for_file(path: Path) -> str:
    for _ in range(200):
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        await asyncio.sleep(0.025)
    raise AssertionError(f"{path} never appeared")


async def wait_gone(*argv: str) -> bool:
    """Whether the processes running ``argv`` are all gone (within 2 s)."""
    for _ in range(100):
        if not running(*argv):
            return True
        await asyncio.sleep(0.02)
    return False


def inside(box: LocalSandboxSession) -> str:
    """What ``pwd`` says in the workspace: /workspace where it is mounted there."""
    return WORKSPACE if confinement() == "bubblewrap" else box.workspace


async def test_exit_code_stdout_and_stderr_come_back_separately(tmp_path: Path) -> None:
    box = await make(tmp_path)
    result = await box.run("echo out; echo err >&2; exit 3")
    assert result == hs.SandboxResult(exit_code=3, stdout="out\n", stderr="err\n")


async def test_a_command_killed_by_a_signal_has_a_negative_exit_code(tmp_path: Path) -> None:
    box = await make(tmp_path)
    assert (await box.run("kill -9 $$")).exit_code == KILLED_BY_9


async def test_commands_start_in_the_workspace_and_in_a_working_directory(tmp_path: Path) -> None:
    box = await make(tmp_path)
    await box.write_file("/workspace/sub/x.txt", "x")
    assert (await box.run("pwd; cat sub/x.txt")).stdout == f"{inside(box)}\nx"
    inner = await box.run("pwd", working_directory="/workspace/sub")
    assert inner.stdout == f"{inside(box)}/sub\n"
    assert (await box.run("pwd", working_directory="sub")).stdout == f"{inside(box)}/sub\n"


@pytest.mark.parametrize(
    ("directory", "error"),
    [
        ("/etc", hs.SandboxPathError),
        ("/workspace/../..", hs.SandboxPathError),
        ("/workspace/missing", hs.SandboxFileNotFoundError),
        ("/workspace/file.txt", hs.SandboxPathError),
    ],
    ids=["outside", "dotdot", "missing", "a-file"],
)
async def test_a_bad_working_directory_is_refused_before_anything_runs(
    tmp_path: Path, directory: str, error: type[Exception]
) -> None:
    box = await make(tmp_path)
    await box.write_file("file.txt", "x")
    with pytest.raises(error):
        await box.run("touch ran", working_directory=directory)
    assert sorted(os.listdir(box.workspace)) == ["file.txt"]


async def test_the_apps_environment_never_reaches_a_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-fake-secret-for-the-env-test-0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("HELIX_TEST_TOKEN", secret)
    box = await make(tmp_path)
    result = await box.run("env; cat /proc/$$/environ > environ.bin")
    raw = Path(box.workspace, "environ.bin").read_bytes()
    assert secret.encode() not in raw
    assert secret not in result.stdout
    names = {entry.split(b"=", 1)[0].decode() for entry in raw.split(b"\0") if entry}
    assert names - {"PWD"} == {"PATH", "HOME", "TMPDIR", "LANG"}  # bubblewrap sets PWD
    assert f"HOME={inside(box)}".encode() in raw.split(b"\0")


async def test_the_providers_env_and_the_calls_env_are_added(tmp_path: Path) -> None:
    box = await make(tmp_path, env={"MODE": "ci", "LANG": "C"})
    result = await box.run('echo "$MODE $EXTRA $LANG"', env={"EXTRA": "yes"})
    assert result.stdout == "ci yes C\n"


@pytest.mark.parametrize(
    "env", [{"A=B": "x"}, {"": "x"}, {"A": "x\0y"}, {"A": 1}], ids=["eq", "empty", "nul", "int"]
)
async def test_a_bad_env_entry_is_a_typed_error(tmp_path: Path, env: dict[str, str]) -> None:
    box = await make(tmp_path)
    with pytest.raises(hs.InvalidRequestError):
        await box.run("touch ran", env=env)
    with pytest.raises(hs.InvalidRequestError):
        hs.LocalSandbox(tmp_path, env=env)
    assert not Path(box.workspace, "ran").exists()


async def test_output_past_the_cap_is_dropped_and_the_result_says_so(tmp_path: Path) -> None:
    box = await make(tmp_path, max_output_bytes=1000)
    # 10 MB through a 1000-byte cap: the command is not blocked by a full pipe.
    result = await box.run("head -c 10000000 /dev/zero | tr '\\0' a; echo done >&2")
    assert result.stdout == "a" * 1000
    assert result.stderr == "done\n"
    assert result.truncated is True
    assert result.exit_code == 0
    assert (await box.run("echo short")).truncated is False


async def test_the_cap_never_splits_a_character(tmp_path: Path) -> None:
    box = await make(tmp_path, max_output_bytes=5)
    result = await box.run("printf 'ééé'")  # 6 bytes; the cap cuts the third in half
    assert result.stdout == "éé"
    assert result.truncated is True
    broken = await box.run("printf 'ab\\377\\303'")  # not cut: invalid bytes are replaced
    assert broken.stdout == "ab\ufffd\ufffd"
    assert broken.truncated is False


async def test_a_command_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    box = await make(tmp_path)
    with pytest.raises(hs.SandboxTimeoutError) as caught:
        await box.run("sleep 301 & echo started; sleep 300", timeout=0.5)
    assert caught.value.stdout == "started\n"
    assert caught.value.code == "sandbox_timeout"
    assert await wait_gone("sleep", "301") and await wait_gone("sleep", "300")


async def test_the_default_timeout_is_the_providers(tmp_path: Path) -> None:
    box = await make(tmp_path, timeout=0.3)
    with pytest.raises(hs.SandboxTimeoutError) as caught:
        await box.run("sleep 30")
    assert caught.value.timeout == 0.3


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan")])
async def test_a_bad_timeout_is_a_typed_error(tmp_path: Path, timeout: float) -> None:
    box = await make(tmp_path)
    with pytest.raises(hs.InvalidRequestError):
        await box.run("true", timeout=timeout)
    with pytest.raises(hs.InvalidRequestError):
        hs.LocalSandbox(tmp_path, timeout=timeout)


async def test_cancelling_a_command_kills_its_whole_process_group(tmp_path: Path) -> None:
    box = await make(tmp_path)
    task = asyncio.ensure_future(box.run("sleep 302 & echo up > up.txt; sleep 303"))
    await wait_for_file(Path(box.workspace, "up.txt"))
    assert running("sleep", "302") and running("sleep", "303")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert await wait_gone("sleep", "302") and await wait_gone("sleep", "303")


async def test_background_processes_end_with_their_command(tmp_path: Path) -> None:
    box = await make(tmp_path, timeout=20)
    # The background sleep holds stdout open: without ending the group this would hang.
    result = await box.run("sleep 304 & echo started")
    assert result.exit_code == 0
    assert await wait_gone("sleep", "304")


async def test_commands_of_one_sandbox_run_concurrently(tmp_path: Path) -> None:
    box = await make(tmp_path)
    first = asyncio.ensure_future(box.run("while [ ! -e go ]; do sleep 0.02; done; echo a"))
    second = await box.run("touch go; echo b")
    assert second.stdout == "b\n"
    assert (await asyncio.wait_for(first, 5)).stdout == "a\n"


async def test_close_stops_running_commands_and_removes_the_directory(tmp_path: Path) -> None:
    box = await make(tmp_path)
    task = asyncio.ensure_future(box.run("sleep 305 & echo up > up.txt; sleep 306"))
    await wait_for_file(Path(box.workspace, "up.txt"))
    await box.close()
    with pytest.raises(hs.SandboxNotFoundError):
        await asyncio.wait_for(task, 5)
    assert await wait_gone("sleep", "305") and await wait_gone("sleep", "306")
    assert not Path(box.home).exists()
    with pytest.raises(hs.SandboxNotFoundError):
        await box.run("true")
    with pytest.raises(hs.SandboxNotFoundError):
        await box.read_file("child.pid")
