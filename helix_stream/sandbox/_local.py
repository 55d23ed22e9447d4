"""``LocalSandbox``: sandboxes as directories on this machine, for development and trusted code.

Each (session, agent) gets a directory under ``root_dir``::

    <root_dir>/<id>/workspace/   what the sandbox calls /workspace; commands start here
    <root_dir>/<id>/tmp/         TMPDIR of its commands
    <root_dir>/<id>/owner.json   the session and agent it belongs to (checked by attach)

The id is derived from the session id and the agent name, so ``create`` for the same pair finds
the same directory again (a session whose stored id was lost loses no files), and ``attach``
checks the owner before it hands a directory to a session.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeVar

from .._sandbox_protocol import SandboxResult
from ..errors import (
    InvalidRequestError,
    SandboxFileNotFoundError,
    SandboxNotFoundError,
    SandboxPathError,
)
from ._confine import confinement, launch
from ._paths import WORKSPACE, resolve_within, workspace_path
from ._process import run_shell

if TYPE_CHECKING:
    from ..state import SessionInfo

__all__ = ["DEFAULT_PATH", "LocalSandbox", "LocalSandboxSession"]

T = TypeVar("T")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
_ID = re.compile(r"[a-z0-9-]{1,80}")
_OWNER = "owner.json"


def _sandbox_id(session_id: str, agent: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", agent.lower()).strip("-")[:32] or "agent"
    digest = hashlib.sha256(f"{session_id}\0{agent}".encode()).hexdigest()[:24]
    return f"{slug}-{digest}"


def _check_env(env: Mapping[str, str], where: str) -> None:
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise InvalidRequestError(f"{where}: {key!r} is not an environment variable name")
        if not isinstance(value, str) or "\0" in value:
            raise InvalidRequestError(f"{where}: the value of {key} must be a string without NUL")


@dataclass(frozen=True, slots=True)
class LocalSandbox:
    """A sandbox provider that gives each (session, agent) a directory under ``root_dir``.

    **This is not file system or network isolation.** Commands run as this process's user, on
    this machine, with its network and its file system: a command can read or change any file
    that user can. Use it for development and for code you trust; for anything else use
    :class:`~helix_stream.BubblewrapSandbox` or a provider backed by a container or a microVM
    service (the README shows one).

    What it does guarantee: file access through the sandbox stays inside ``/workspace``
    (``..``, absolute paths elsewhere and symbolic links out are refused); commands get a
    minimal environment (``PATH``, ``HOME``, ``TMPDIR``, ``LANG`` and what you pass in
    ``env``), never this process's (no API key leaks into a command); on Linux they run in a
    PID namespace of their own (and user and mount ones where the machine allows), so they
    cannot read this process's environment or memory through ``/proc``, with the sandbox's
    directory mounted at ``/workspace`` when bubblewrap is installed; their output is capped;
    they time out; and cancelling a command kills all it started.

    Example::

        agent = hs.Agent(name="coder", model="helix/demo", tools=[run_tests],
                         sandbox=hs.LocalSandbox("/var/tmp/helix-sandboxes"))

    Args:
        root_dir: Where the sandboxes' directories go (made if missing).
        env: Variables every command gets, on top of the minimal ones.
        timeout: Seconds a command may run unless ``run(timeout=)`` says otherwise.
        max_output_bytes: How much of stdout, and of stderr, a result keeps.
        description: What ``sandbox.description`` tells the model (a default otherwise).
        namespaces: Run commands in namespaces of their own where the machine can (default);
            ``False``: on the host, as any process of this user (README, "Sandboxes and skills").
    """

    root_dir: str | os.PathLike[str]
    _: KW_ONLY
    env: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 60.0
    max_output_bytes: int = 1_000_000
    description: str | None = None
    namespaces: bool = True
    _isolated: ClassVar[bool] = False  # BubblewrapSandbox: only /workspace, no network

    def __post_init__(self) -> None:
        _check_env(self.env, "LocalSandbox(env=)")
        if not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise InvalidRequestError("LocalSandbox(timeout=) must be a positive number")
        if self.max_output_bytes < 1:
            raise InvalidRequestError("LocalSandbox(max_output_bytes=) must be at least 1")

    async def create(self, session: SessionInfo, agent: str) -> LocalSandboxSession:
        """The directory of ``agent`` in ``session``: made now, or found if it exists."""
        sandbox_id = _sandbox_id(session.id, agent)
        owner = {"session_id": session.id, "agent": agent}
        return await asyncio.to_thread(self._make, sandbox_id, owner)

    async def attach(self, session: SessionInfo, sandbox_id: str) -> LocalSandboxSession:
        """The sandbox with this id, if it exists and belongs to ``session``.

        Raises:
            SandboxNotFoundError: no such sandbox (or closed), or another session's.
        """
        return await asyncio.to_thread(self._find, sandbox_id, session.id)

    def _make(self, sandbox_id: str, owner: dict[str, str]) -> LocalSandboxSession:
        Path(self.root_dir).mkdir(parents=True, exist_ok=True)
        home = Path(self.root_dir, sandbox_id)
        for folder in (home, home / "workspace", home / "tmp"):
            folder.mkdir(exist_ok=True, mode=0o700)  # this user's only
        (home / _OWNER).write_text(json.dumps(owner, sort_keys=True), encoding="utf-8")
        return self._session(sandbox_id, home)

    def _find(self, sandbox_id: str, session_id: str) -> LocalSandboxSession:
        missing = SandboxNotFoundError(
            f"No sandbox {sandbox_id!r} of this session under {os.fspath(self.root_dir)!r}: it "
            "was closed, its directory was removed, or it belongs to another session."
        )
        if not isinstance(sandbox_id, str) or not _ID.fullmatch(sandbox_id):
            raise missing
        home = Path(self.root_dir, sandbox_id)
        try:
            owner = json.loads((home / _OWNER).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise missing from None
        if not isinstance(owner, dict) or owner.get("session_id") != session_id:
            raise missing
        return self._session(sandbox_id, home)

    def _session(self, sandbox_id: str, home: Path) -> LocalSandboxSession:
        workspace = os.path.realpath(home / "workspace")
        env = {
            "PATH": DEFAULT_PATH,
            "HOME": workspace,
            "TMPDIR": os.path.realpath(home / "tmp"),
            "LANG": "C.UTF-8",
            **self.env,
        }
        description = self.description or (
            f"{self._kind()} Commands start in the workspace ({WORKSPACE}). Output over "
            f"{self.max_output_bytes} bytes is cut; a command is killed after "
            f"{self.timeout:g} s."
        )
        return LocalSandboxSession(
            id=sandbox_id,
            description=description,
            home=os.path.realpath(home),
            workspace=workspace,
            env=env,
            timeout=self.timeout,
            max_output_bytes=self.max_output_bytes,
            namespaces=self.namespaces or self._isolated,
            isolated=self._isolated,
        )

    def _kind(self) -> str:
        """The first sentence of the default description: what a command runs in."""
        sysname = os.uname().sysname
        if self.namespaces and confinement() == "bubblewrap":
            return f"A shell (/bin/sh) on {sysname}, the workspace mounted at {WORKSPACE}."
        return f"A local shell (/bin/sh) on {sysname}; use paths relative to the workspace."


@dataclass(slots=True, kw_only=True)
class LocalSandboxSession:
    """One ``LocalSandbox`` directory: an :class:`~helix_stream.Sandbox` (see ``LocalSandbox``).

    Attributes:
        id: What the session stores (``LocalSandbox.attach`` finds it again).
        description: What the model may be told about it.
        workspace: The real path of its ``/workspace``.

    Example::

        provider = hs.LocalSandbox("/var/tmp/helix-sandboxes")
        sandbox = await provider.create(session, "coder")
        if isinstance(sandbox, LocalSandboxSession):
            print(sandbox.workspace)                      # the real directory behind /workspace
    """

    id: str
    description: str
    home: str
    workspace: str
    env: dict[str, str]
    timeout: float
    max_output_bytes: int
    namespaces: bool = True
    isolated: bool = False
    _closed: bool = False
    _running: set[asyncio.Future[SandboxResult]] = field(default_factory=set)

    def resolve_path(self, path: str) -> str:
        """The real path of a logical ``/workspace`` path, symbolic links followed.

        Raises:
            SandboxPathError: the path leaves ``/workspace``.
        """
        return resolve_within(self.workspace, path)

    async def run(
        self,
        command: str,
        *,
        working_directory: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> SandboxResult:
        """Run ``command`` with ``/bin/sh -c`` (see :class:`~helix_stream.Sandbox`).

        Raises:
            SandboxPathError: ``working_directory`` leaves ``/workspace`` or is a file.
            SandboxFileNotFoundError: ``working_directory`` does not exist.
            SandboxTimeoutError: the command ran past its timeout and was killed.
            InvalidRequestError: a bad ``env`` entry or ``timeout``.
        """
        self._check_open()
        if not isinstance(command, str):
            raise InvalidRequestError("run(command) must be a string (a shell command line)")
        _check_env(env or {}, "run(env=)")
        limit = self.timeout if timeout is None else timeout
        if not (isinstance(limit, int | float) and limit > 0 and math.isfinite(limit)):
            raise InvalidRequestError("run(timeout=) must be a positive number of seconds")
        cwd = self._directory(working_directory or WORKSPACE)
        env = {**self.env, **(env or {})}
        start = (
            launch(command, workspace=self.workspace, cwd=cwd, env=env, isolated=self.isolated)
            if self.namespaces
            else None
        )
        # Its own task, so that close() can stop the command without cancelling the tool.
        command_task = asyncio.ensure_future(
            run_shell(
                start.argv if start else ["/bin/sh", "-c", command],
                cwd=cwd,
                env=start.env if start else env,
                timeout=float(limit),
                cap=self.max_output_bytes,
            )
        )
        self._running.add(command_task)
        try:
            return await command_task
        except asyncio.CancelledError:
            caller = asyncio.current_task()
            if self._closed and (caller is None or not caller.cancelling()):
                raise SandboxNotFoundError(
                    f"Sandbox {self.id!r} was closed while the command ran."
                ) from None
            raise
        finally:
            self._running.discard(command_task)

    async def read_file(self, path: str) -> bytes:
        """The bytes of a file in ``/workspace``.

        Raises:
            SandboxPathError: the path leaves ``/workspace`` or is a directory.
            SandboxFileNotFoundError: there is no such file.
        """
        real = self._resolve_open(path)
        return await asyncio.to_thread(_translate, path, lambda: Path(real).read_bytes())

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Write a file in ``/workspace``, making its folders; readers never see half of it.

        Raises:
            SandboxPathError: the path leaves ``/workspace``, or names ``/workspace`` or a
                directory.
        """
        real = self._resolve_open(path)
        if real == self.workspace:
            raise SandboxPathError(f"{path!r} is {WORKSPACE} itself: name a file in it")
        raw = data.encode() if isinstance(data, str) else bytes(data)
        await asyncio.to_thread(_translate, path, lambda: _write_atomic(real, raw))

    async def close(self) -> None:
        """Stop this sandbox's running commands and remove its directory."""
        self._closed = True
        running = list(self._running)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await asyncio.to_thread(shutil.rmtree, self.home, True)

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxNotFoundError(f"Sandbox {self.id!r} was closed; a new one is needed.")

    def _resolve_open(self, path: str) -> str:
        self._check_open()
        return self.resolve_path(path)

    def _directory(self, path: str) -> str:
        real = self.resolve_path(path)
        if not os.path.exists(real):
            raise SandboxFileNotFoundError(f"working_directory {path!r} does not exist")
        if not os.path.isdir(real):
            raise SandboxPathError(f"working_directory {path!r} is not a directory")
        return real


def _translate(path: str, fn: Callable[[], T]) -> T:
    """Run a file operation; the OS errors a caller can cause become typed errors."""
    logical = workspace_path(path)
    try:
        return fn()
    except FileNotFoundError:
        raise SandboxFileNotFoundError(f"{logical} does not exist") from None
    except (IsADirectoryError, NotADirectoryError, FileExistsError):
        raise SandboxPathError(
            f"{logical} is a directory, or a folder on its way is a file"
        ) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a loop of symbolic links, at any depth
            raise SandboxPathError(f"{logical} is a loop of symbolic links") from None
        raise


def _write_atomic(real: str, data: bytes) -> None:
    folder = os.path.dirname(real)
    os.makedirs(folder, exist_ok=True)
    # Write beside it, then rename over it: a reader sees the old file or the new one.
    fd, temp = tempfile.mkstemp(dir=folder, prefix=".helix-write-")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, real)
    except BaseException:
        os.unlink(temp)
        raise
