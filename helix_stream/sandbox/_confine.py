"""How a sandbox command is confined: the namespaces it runs in and what it sees of the machine.

A command the model runs must not read the server's secrets. The server's environment is kept
out of a command's (``_process``), but on Linux a process can read another's environment and
memory through ``/proc/<pid>/`` when both run as the same user — or when it runs as root, as a
server in a container often does. So a command runs in **its own PID namespace**, with a
``/proc`` of its own: it sees its own processes and none of the server's. Its capabilities are
dropped, so even as root it cannot unmount that ``/proc`` to find the machine's again.

Three ways, chosen once per process (:func:`confinement`), the first that works here:

- ``"bubblewrap"``: Debian's ``bwrap`` (the ``bubblewrap`` package) — PID, user (where the
  kernel allows), mount and IPC namespaces, capabilities dropped. :func:`launch` with
  ``isolated=False`` gives the command the machine's file system as it is plus
  ``/workspace`` (the sandbox's directory, mounted there: the paths the skill index gives work),
  and the network. With ``isolated=True`` (``BubblewrapSandbox``) it sees only ``/workspace``,
  a private ``/tmp``, the system's programs and libraries read-only (``/usr``, ``/bin``,
  ``/lib*``, ``/sbin``, a few files of ``/etc``), no network (a network namespace with only
  loopback) and no other process.
- ``"unshare"`` (util-linux, without bubblewrap): PID, user and mount namespaces with a
  ``/proc`` of its own and no capabilities; the file system and the network are the
  machine's, and ``/workspace`` is only the working directory (no mount point can be made
  there without bubblewrap's private root).
- ``"none"``: neither works (not Linux, or namespaces are forbidden): the command runs on the
  host as any process of the server's user.

A command killed by signal N reports exit code ``-N`` on the host, ``128 + N`` inside a
namespace (the namespace's first process, a shell, reports it as a shell does).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ._paths import WORKSPACE

__all__ = ["Confinement", "Launch", "confinement", "launch"]

Confinement = Literal["bubblewrap", "unshare", "none"]

# Files of /etc an isolated command may need (a shell and coreutils need none of them); the
# rest of /etc (an app's configuration, keys) stays out.
_ETC = ("alternatives", "ld.so.cache", "localtime", "passwd", "group", "nsswitch.conf")
# The system's programs and libraries, read-only; a top-level link (Debian's merged /usr:
# /bin -> usr/bin) is made as the same link.
_SYSTEM = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_BWRAP_BASE = ("--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-user-try")
_UNSHARE = ("--map-current-user", "--pid", "--fork", "--mount-proc", "--kill-child")
_NO_CAPS = ("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--")


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """What to start for one command: ``argv`` in ``cwd`` with exactly ``env``."""

    argv: list[str]
    cwd: str
    env: dict[str, str]


def _works(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False, env={})
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout == b"ok\n"


@functools.cache
def bwrap_path() -> str | None:
    """``bwrap`` when it is installed and can make namespaces here, else ``None``."""
    path = shutil.which("bwrap")
    if path is None:
        return None
    probe = [path, *_BWRAP_BASE, "--cap-drop", "ALL", *_isolated_view(), "--proc", "/proc"]
    return path if _works([*probe, "--", "/bin/sh", "-c", "echo ok"]) else None


@functools.cache
def confinement() -> Confinement:
    """The way this machine confines ``LocalSandbox`` commands (see the module docstring)."""
    if bwrap_path() is not None:
        return "bubblewrap"
    unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
    if unshare and setpriv:
        probe = [unshare, *_UNSHARE, "--", setpriv, *_NO_CAPS[1:], "/bin/sh", "-c", "echo ok"]
        if _works(probe):
            return "unshare"
    return "none"


def _host_view() -> list[str]:
    """The machine's file system as it is (read-write), each top-level entry mounted at its
    own place in bubblewrap's private root, so that ``/workspace`` can be added beside them
    without making a directory on the machine."""
    args: list[str] = []
    for name in sorted(os.listdir("/")):
        path = "/" + name
        if name in ("proc", "dev", WORKSPACE.strip("/")):
            continue
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        else:
            args += ["--bind", path, path]
    return [*args, "--dev-bind", "/dev", "/dev"]


def _isolated_view() -> list[str]:
    args: list[str] = []
    for name in _SYSTEM:
        path = "/" + name
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return [*args, "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-net", "--unshare-uts"]


def _inside(workspace: str, cwd: str) -> str:
    """``cwd`` (a real directory in ``workspace``) as the command sees it, under /workspace."""
    relative = os.path.relpath(cwd, workspace)
    return WORKSPACE if relative == "." else f"{WORKSPACE}/{relative}"


def launch(
    command: str,
    *,
    workspace: str,
    cwd: str,
    env: Mapping[str, str],
    isolated: bool = False,
) -> Launch:
    """How to start ``command`` (a ``/bin/sh -c`` line) for a sandbox whose real workspace
    directory is ``workspace``, in ``cwd`` (a real directory in it).

    ``isolated``: only ``/workspace`` and the system's programs, no network (bubblewrap only:
    the caller checks :func:`bwrap_path` first).
    """
    shell = ["/bin/sh", "-c", command]
    bwrap = bwrap_path()
    if isolated or (bwrap is not None and confinement() == "bubblewrap"):
        assert bwrap is not None, "isolation needs bubblewrap (checked when the sandbox is made)"
        view = _isolated_view() if isolated else _host_view()
        inner = {**env, "HOME": WORKSPACE}
        if isolated:
            inner["TMPDIR"] = "/tmp"
        argv = [
            bwrap, *_BWRAP_BASE, "--cap-drop", "ALL", *view, "--proc", "/proc",
            "--bind", workspace, WORKSPACE, "--chdir", _inside(workspace, cwd), "--", *shell,
        ]  # fmt: skip
        return Launch(argv=argv, cwd=cwd, env=inner)
    if confinement() == "unshare":
        unshare, setpriv = shutil.which("unshare"), shutil.which("setpriv")
        assert unshare and setpriv
        # The namespace's first process ignores signals it has no handler for (``kill -9
        # $$`` would do nothing): the command's shell runs as its child.
        wrapper = ["/bin/sh", "-c", '/bin/sh -c "$1"', "sh", command]
        argv = [unshare, *_UNSHARE, "--", setpriv, *_NO_CAPS[1:], *wrapper]
        return Launch(argv=argv, cwd=cwd, env=dict(env))
    return Launch(argv=shell, cwd=cwd, env=dict(env))
