"""LocalSandbox as a provider: one directory per (session, agent), attach after a restart."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import helix_stream as hs
from tests.sandbox._util import session


def test_the_provider_and_its_sandboxes_follow_the_protocols(tmp_path: Path) -> None:
    provider = hs.LocalSandbox(tmp_path)
    assert isinstance(provider, hs.SandboxProvider)


async def test_a_sandbox_follows_the_protocol_and_describes_itself(tmp_path: Path) -> None:
    box = await hs.LocalSandbox(tmp_path, timeout=30, max_output_bytes=4096).create(
        session(), "coder"
    )
    assert isinstance(box, hs.Sandbox)
    assert "/workspace" in box.description and "30 s" in box.description
    assert "4096 bytes" in box.description
    custom = await hs.LocalSandbox(tmp_path, description="Python 3 and git.").create(
        session(), "coder"
    )
    assert custom.description == "Python 3 and git."


async def test_each_session_and_agent_gets_its_own_directory(tmp_path: Path) -> None:
    provider = hs.LocalSandbox(tmp_path)
    a = await provider.create(session("s1"), "coder")
    b = await provider.create(session("s1"), "reviewer")
    c = await provider.create(session("s2"), "coder")
    assert len({a.id, b.id, c.id}) == 3
    assert len({a.workspace, b.workspace, c.workspace}) == 3
    await a.write_file("mine.txt", "a")
    assert not await _exists(b, "mine.txt") and not await _exists(c, "mine.txt")
    assert a.id.startswith("coder-") and b.id.startswith("reviewer-")


async def test_creating_again_finds_the_same_directory_and_its_files(tmp_path: Path) -> None:
    provider = hs.LocalSandbox(tmp_path)
    first = await provider.create(session("s1"), "coder")
    await first.write_file("kept.txt", "still here")
    again = await provider.create(session("s1"), "coder")
    assert again.id == first.id
    assert await again.read_file("kept.txt") == b"still here"


async def test_attach_reconnects_in_a_new_provider_as_after_a_restart(tmp_path: Path) -> None:
    box = await hs.LocalSandbox(tmp_path).create(session("s1"), "coder")
    await box.write_file("work.txt", "progress")
    stored_id = box.id
    restarted = hs.LocalSandbox(tmp_path)  # a new process: nothing in memory
    attached = await restarted.attach(session("s1"), stored_id)
    assert attached.id == stored_id and attached.workspace == box.workspace
    assert await attached.read_file("work.txt") == b"progress"
    assert (await attached.run("cat work.txt")).stdout == "progress"


@pytest.mark.parametrize(
    "sandbox_id", ["../etc", "", "UPPER", "a/b", "..", "coder-" + "0" * 24], ids=repr
)
async def test_attach_to_an_unknown_or_malformed_id_is_refused(
    tmp_path: Path, sandbox_id: str
) -> None:
    provider = hs.LocalSandbox(tmp_path)
    with pytest.raises(hs.SandboxNotFoundError) as caught:
        await provider.attach(session("s1"), sandbox_id)
    assert caught.value.http_status == 404
    assert os.listdir(tmp_path) == []


async def test_a_session_cannot_attach_to_another_sessions_sandbox(tmp_path: Path) -> None:
    provider = hs.LocalSandbox(tmp_path)
    box = await provider.create(session("s1"), "coder")
    with pytest.raises(hs.SandboxNotFoundError):
        await provider.attach(session("s2"), box.id)


async def test_a_closed_sandbox_cannot_be_attached_and_creating_again_starts_empty(
    tmp_path: Path,
) -> None:
    provider = hs.LocalSandbox(tmp_path)
    box = await provider.create(session("s1"), "coder")
    await box.write_file("old.txt", "x")
    await box.close()
    with pytest.raises(hs.SandboxNotFoundError):
        await provider.attach(session("s1"), box.id)
    fresh = await provider.create(session("s1"), "coder")
    assert os.listdir(fresh.workspace) == []


async def test_the_sandbox_directories_are_private_to_this_user(tmp_path: Path) -> None:
    box = await hs.LocalSandbox(tmp_path).create(session(), "coder")
    for folder in (box.home, box.workspace):
        assert os.stat(folder).st_mode & 0o077 == 0


async def _exists(box: hs.Sandbox, path: str) -> bool:
    try:
        await box.read_file(path)
    except hs.SandboxFileNotFoundError:
        return False
    return True
