"""What a sandbox command can see of the machine (issue 36 part 6): a PID namespace with a
``/proc`` of its own (no process of the server's, whose environment holds its secrets), the
skill paths at ``/workspace/skills/...``, and, under ``BubblewrapSandbox``, only the workspace
and no network. Each confinement this machine offers is tried; ``namespaces=False`` shows what
a command sees on the host (the control: the same scan finds the server's environment)."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.sandbox import SkillSet, _bubblewrap, _confine, _local
from tests._readme import doc_section
from tests.sandbox._util import session

NO_BWRAP = "bubblewrap cannot run here (apt-get install bubblewrap; .ci/run installs it)"
# In the test process's own (initial) environment, never in a sandbox's: where a command
# finds it, it read this process's /proc/<pid>/environ.
SERVER_ONLY = b"LITELLM_LOCAL_MODEL_COST_MAP="
SCAN = "cat /proc/$PPID/environ /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; ls /proc"


def needs_bwrap() -> None:
    if _confine.bwrap_path() is None:
        pytest.skip(NO_BWRAP)


@pytest.fixture(params=["bubblewrap", "unshare"])
def confined(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each namespace confinement, where this machine has it."""
    if request.param == "bubblewrap":
        needs_bwrap()
    else:
        monkeypatch.setattr(_confine, "bwrap_path", lambda: None)
        _confine.confinement.cache_clear()
        if _confine.confinement() != "unshare":
            pytest.skip("unshare/setpriv cannot make namespaces here")
        monkeypatch.setattr(_local, "confinement", lambda: "unshare")
    kind: str = request.param
    return kind


def processes(listing: str) -> list[str]:
    return [name for name in listing.split() if name.isdigit()]


@pytest.fixture(autouse=True)
def fresh_probe() -> None:
    _confine.confinement.cache_clear()


async def test_a_command_sees_only_its_own_processes_and_not_the_servers_environment(
    tmp_path: Path, confined: str
) -> None:
    assert SERVER_ONLY in Path(f"/proc/{os.getpid()}/environ").read_bytes()  # the premise
    box = await hs.LocalSandbox(tmp_path, env={"MARK": "mine"}).create(session(), "coder")
    result = await box.run(SCAN)
    assert result.exit_code == 0, result
    assert b"MARK=mine" in result.stdout.encode()  # the scan did read environments: its own
    assert SERVER_ONLY.decode() not in result.stdout
    assert len(processes(result.stdout)) <= 6  # its shell, cat, tr, ls and an init
    root = await box.run("umount -l /proc; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'")
    assert SERVER_ONLY.decode() not in root.stdout  # no capability to uncover the host's


async def test_on_the_host_the_same_scan_finds_the_servers_environment(tmp_path: Path) -> None:
    box = await hs.LocalSandbox(tmp_path, namespaces=False).create(session(), "coder")
    result = await box.run(SCAN)
    assert SERVER_ONLY.decode() in result.stdout  # what namespaces take away


SKILLS = SkillSet([hs.Skill("research", "Find sources.", "# Research\n", files={"a.md": "A\n"})])


@pytest.mark.parametrize("provider", [hs.LocalSandbox, hs.BubblewrapSandbox])
async def test_the_skill_index_paths_work_in_commands(
    tmp_path: Path, provider: type[hs.LocalSandbox]
) -> None:
    needs_bwrap()
    box = await provider(tmp_path).create(session(), "coder")
    await SKILLS.install(box)
    assert "/workspace/skills/<name>/" in SKILLS.index(sandbox=True)
    result = await box.run(
        "cat /workspace/skills/research/SKILL.md /workspace/skills/research/a.md"
    )
    assert result.exit_code == 0, result
    assert "# Research" in result.stdout and result.stdout.endswith("A\n")
    assert (await box.run("pwd")).stdout == "/workspace\n"


async def test_bubblewrap_confines_files_to_the_workspace_and_has_no_network(
    tmp_path: Path,
) -> None:
    needs_bwrap()
    outside = tmp_path / "app-secret.txt"
    outside.write_text("the app's secret")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        box = await hs.BubblewrapSandbox(tmp_path / "boxes").create(session(), "coder")
        result = await box.run(
            f"cat {outside}; ls /home /root /srv /var {Path.cwd()}; echo x > written; "
            f'cat written; echo y > /usr/nope; python3 -c "import socket; '
            f"socket.create_connection(('127.0.0.1', {port}), timeout=2)\" && echo connected; "
            "ls /proc | grep -c '^[0-9]'"
        )
    assert "the app's secret" not in result.stdout and "connected" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == "x"  # the workspace is writable, the rest not there or read-only
    assert int(lines[-1]) <= 6
    assert "No such file" in result.stderr and "Read-only file system" in result.stderr
    assert "ConnectionRefusedError" in result.stderr  # python ran; its own loopback only
    assert Path(box.workspace, "written").read_text() == "x\n"
    assert not outside.with_name("nope").exists()


async def test_bubblewrap_sandbox_without_bubblewrap_is_refused_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_bubblewrap, "bwrap_path", lambda: None)
    with pytest.raises(hs.FrameworkNotSupportedError, match="apt-get install bubblewrap"):
        await hs.BubblewrapSandbox(tmp_path).create(session(), "coder")
    assert not any(tmp_path.iterdir())  # nothing made


def test_the_guides_bubblewrap_example_makes_an_agent_with_that_sandbox() -> None:
    section = doc_section(
        "## `hs.BubblewrapSandbox`: a command sees its workspace and nothing else"
    )
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None

    @hs.tool
    def run_tests(path: str) -> str:
        """Run the tests under a path."""
        return path

    scope: dict[str, object] = {"hs": hs, "run_tests": run_tests}
    exec(compile(match[1], "docs (BubblewrapSandbox)", "exec"), scope)
    agent = scope["agent"]
    assert isinstance(agent, hs.Agent) and isinstance(agent.sandbox, hs.BubblewrapSandbox)
