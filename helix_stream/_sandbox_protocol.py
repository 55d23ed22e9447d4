"""The sandbox contract: :class:`Sandbox`, :class:`SandboxResult`, :class:`SandboxProvider`.

A sandbox is the place one agent's commands run for one session. Its shape is the AI SDK 7
``experimental_sandbox`` session's (``description``, ``run({command, workingDirectory, env})``
returning ``{exitCode, stdout, stderr}``), in Python spelling, plus file access through logical
``/workspace`` paths and ``close()``; so a tool written against one moves to the other.

A provider makes sandboxes. The session engine asks it for one the first time a tool of the
agent needs it (``create``), stores the sandbox's ``id`` with the session, and reconnects with
``attach`` after a restart instead of making a new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .state import SessionInfo

__all__ = ["Sandbox", "SandboxProvider", "SandboxResult"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxResult:
    """How a command ended.

    Attributes:
        exit_code: The command's exit status (negative: killed by that signal).
        stdout: What it wrote to stdout, decoded as UTF-8 (invalid bytes replaced).
        stderr: The same for stderr.
        truncated: Whether stdout or stderr went past the sandbox's output cap; the text
            is then the first bytes up to the cap, and the rest was dropped.

    Example::

        result = await sandbox.run("python3 --version", timeout=10)
        if result.exit_code == 0 and not result.truncated:
            print(result.stdout or result.stderr)
    """

    exit_code: int
    stdout: str
    stderr: str
    truncated: bool = False


@runtime_checkable
class Sandbox(Protocol):
    """One agent's sandbox in one session: what a tool gets from ``await ctx.get_sandbox()``.

    Paths are logical: ``/workspace/...``, or relative to ``/workspace``. A path that leaves
    ``/workspace`` (``..``, an absolute path elsewhere, a symbolic link out) is refused with
    :class:`~helix_stream.errors.SandboxPathError` before anything is read, written or run.

    Example::

        @hs.tool(description="Run the tests under a path.")
        async def run_tests(path: str, ctx: hs.ToolContext) -> str:
            sandbox: hs.Sandbox = await ctx.get_sandbox()
            await sandbox.write_file("/workspace/conftest.py", "")
            result = await sandbox.run(f"python3 -m pytest -q {path}", timeout=300)
            return result.stdout[-2000:]
    """

    @property
    def id(self) -> str:
        """What the session stores to find this sandbox again (``provider.attach``)."""
        ...

    @property
    def description(self) -> str:
        """What the model may be told about the environment (root, tools, ports). The
        package never puts it in a prompt itself: add it to the system prompt if you want."""
        ...

    async def run(
        self,
        command: str,
        *,
        working_directory: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> SandboxResult:
        """Run a shell command and wait for it.

        Cancelling the awaiting task (a cancelled tool call, a stopped turn) ends the command.

        Args:
            command: A shell command line.
            working_directory: Where it starts (``/workspace`` by default).
            env: Variables added to the sandbox's own environment.
            timeout: Seconds before it is killed (the sandbox's default when ``None``).
        """
        ...

    async def read_file(self, path: str) -> bytes:
        """The bytes of a file."""
        ...

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Write a file (``str`` as UTF-8), making its folders; it replaces any old one."""
        ...

    def resolve_path(self, path: str) -> str:
        """The backend's own path for a logical ``/workspace`` path."""
        ...

    async def close(self) -> None:
        """End the sandbox: its commands are stopped and its files are gone."""
        ...


@runtime_checkable
class SandboxProvider(Protocol):
    """Makes and finds sandboxes: what ``Agent(sandbox=...)`` takes.

    Example::

        provider: hs.SandboxProvider = hs.LocalSandbox("/var/tmp/helix-sandboxes")
        sandbox = await provider.create(session, "coder")
        again = await provider.attach(session, sandbox.id)    # after a restart, by the stored id
    """

    async def create(self, session: SessionInfo, agent: str) -> Sandbox:
        """A new sandbox for ``agent`` in ``session`` (the session engine calls it once)."""
        ...

    async def attach(self, session: SessionInfo, sandbox_id: str) -> Sandbox:
        """The sandbox ``session`` stored the id of, reconnected (after a process restart).

        Raises:
            SandboxNotFoundError: no such sandbox, or it is another session's.
        """
        ...
