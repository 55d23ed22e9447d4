"""Logical /workspace paths and LocalSandbox files: every way out is refused, nothing is written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import helix_stream as hs
from helix_stream.sandbox import LocalSandboxSession, workspace_parts, workspace_path
from tests.sandbox._util import session


@pytest.fixture
async def box(tmp_path: Path) -> LocalSandboxSession:
    return await hs.LocalSandbox(tmp_path / "root").create(session(), "coder")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the sandboxes' root, with a file in it: what must stay out of reach."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.txt").write_text("top secret")
    return folder


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("/workspace", ()),
        ("/workspace/", ()),
        ("/workspace/a/b.txt", ("a", "b.txt")),
        ("/workspace//a/./b.txt", ("a", "b.txt")),
        ("a/b.txt", ("a", "b.txt")),
        ("./a", ("a",)),
        ("", ()),
        ("/workspace/..foo", ("..foo",)),
    ],
)
def test_workspace_paths_have_one_spelling(path: str, parts: tuple[str, ...]) -> None:
    assert workspace_parts(path) == parts
    assert workspace_path(path) == "/".join(("/workspace", *parts))


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/",
        "/workspaces/x",
        "/tmp/workspace/x",
        "..",
        "../x",
        "/workspace/..",
        "/workspace/a/../b",
        "a/../../x",
        "a/..",
        "a\0b",
    ],
)
def test_paths_that_leave_the_workspace_are_refused(path: str) -> None:
    with pytest.raises(hs.SandboxPathError) as caught:
        workspace_parts(path)
    assert caught.value.code == "sandbox_path_refused" and caught.value.http_status == 400


def test_a_path_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(hs.SandboxPathError):
        workspace_parts(b"/workspace/x")  # type: ignore[arg-type]


async def test_files_round_trip_as_bytes_and_text(box: LocalSandboxSession) -> None:
    await box.write_file("/workspace/notes/a.txt", "héllo")
    await box.write_file("bin.dat", b"\x00\xff")
    assert await box.read_file("notes/a.txt") == "héllo".encode()
    assert await box.read_file("/workspace/bin.dat") == b"\x00\xff"
    assert box.resolve_path("/workspace/notes/a.txt") == os.path.join(
        box.workspace, "notes", "a.txt"
    )
    assert box.resolve_path("/workspace") == box.workspace


async def test_a_write_replaces_the_file_and_leaves_no_temporary_file(
    box: LocalSandboxSession,
) -> None:
    await box.write_file("a.txt", "first, longer")
    await box.write_file("a.txt", "second")
    assert await box.read_file("a.txt") == b"second"
    assert os.listdir(box.workspace) == ["a.txt"]


async def test_missing_files_and_directories_are_typed_errors(box: LocalSandboxSession) -> None:
    with pytest.raises(hs.SandboxFileNotFoundError) as missing:
        await box.read_file("nope.txt")
    assert missing.value.http_status == 404
    assert "/workspace/nope.txt" in missing.value.message
    await box.write_file("folder/x", "x")
    with pytest.raises(hs.SandboxPathError):
        await box.read_file("folder")
    with pytest.raises(hs.SandboxPathError):
        await box.write_file("folder", "x")
    with pytest.raises(hs.SandboxPathError):
        await box.write_file("/workspace", "x")
    with pytest.raises(hs.SandboxPathError):
        await box.write_file("folder/x/y", "a file on the way")
    assert await box.read_file("folder/x") == b"x"


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "/workspace/../../x", "/etc/passwd", "/tmp/x"]
)
async def test_lexical_escapes_are_refused_for_every_operation(
    box: LocalSandboxSession, path: str
) -> None:
    before = sorted(Path(box.home).parent.parent.rglob("*"))
    with pytest.raises(hs.SandboxPathError):
        box.resolve_path(path)
    with pytest.raises(hs.SandboxPathError):
        await box.read_file(path)
    with pytest.raises(hs.SandboxPathError):
        await box.write_file(path, "x")
    assert sorted(Path(box.home).parent.parent.rglob("*")) == before


async def test_a_symbolic_link_out_is_refused(box: LocalSandboxSession, outside: Path) -> None:
    os.symlink(outside, Path(box.workspace, "link"))
    os.symlink(outside / "secret.txt", Path(box.workspace, "secret"))
    for path in ("link/secret.txt", "/workspace/secret", "link"):
        with pytest.raises(hs.SandboxPathError):
            await box.read_file(path)
    with pytest.raises(hs.SandboxPathError):
        await box.write_file("link/new.txt", "x")
    with pytest.raises(hs.SandboxPathError):
        await box.write_file("secret", "overwritten")
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "top secret"


async def test_a_chain_of_links_out_is_refused(box: LocalSandboxSession, outside: Path) -> None:
    ws = Path(box.workspace)
    os.symlink(outside, ws / "c")
    os.symlink("c", ws / "b")  # relative links: b -> c -> outside
    os.symlink(ws / "b", ws / "a")
    with pytest.raises(hs.SandboxPathError):
        await box.read_file("a/secret.txt")
    with pytest.raises(hs.SandboxPathError):
        box.resolve_path("/workspace/a")


async def test_a_dangling_link_out_cannot_be_written_through(
    box: LocalSandboxSession, outside: Path
) -> None:
    os.symlink(outside / "created.txt", Path(box.workspace, "dangling"))
    with pytest.raises(hs.SandboxPathError):
        await box.write_file("dangling", "x")
    assert not (outside / "created.txt").exists()


async def test_links_that_stay_inside_are_followed(box: LocalSandboxSession) -> None:
    ws = Path(box.workspace)
    await box.write_file("real/data.txt", "inside")
    os.symlink(ws / "real", ws / "alias")  # absolute, inside
    os.symlink("alias/data.txt", ws / "chain")  # relative, through another link
    assert await box.read_file("chain") == b"inside"
    assert box.resolve_path("alias/data.txt") == str(ws / "real" / "data.txt")


async def test_a_loop_of_links_is_a_typed_error(box: LocalSandboxSession) -> None:
    ws = Path(box.workspace)
    os.symlink("loop-b", ws / "loop-a")
    os.symlink("loop-a", ws / "loop-b")
    with pytest.raises(hs.SandboxPathError):
        await box.read_file("loop-a")


async def test_the_root_dir_may_itself_be_reached_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "real-root").mkdir()
    os.symlink(tmp_path / "real-root", tmp_path / "root-link")
    box = await hs.LocalSandbox(tmp_path / "root-link").create(session(), "coder")
    await box.write_file("a.txt", "x")
    assert await box.read_file("a.txt") == b"x"
    assert box.workspace.startswith(str(tmp_path / "real-root"))
