"""``BubblewrapSandbox``: ``LocalSandbox``'s directories, each command confined by bubblewrap.

A command sees its workspace at ``/workspace`` (read-write), a private ``/tmp``, the system's
programs and libraries read-only, a ``/proc`` with only its own processes, and no network; the
rest of the machine's files (homes, ``/var``, ``/srv``, the app's own folders, ``/etc`` but a
few files a program needs) are not there. How the command is started: ``_confine``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..errors import FrameworkNotSupportedError
from ._confine import bwrap_path
from ._local import LocalSandbox, LocalSandboxSession
from ._paths import WORKSPACE

if TYPE_CHECKING:
    from ..state import SessionInfo

__all__ = ["BubblewrapSandbox"]

_MISSING = (
    "BubblewrapSandbox needs bubblewrap ('bwrap'), able to make namespaces on this machine: "
    "install Debian's bubblewrap package (apt-get install bubblewrap), or use another sandbox."
)


class BubblewrapSandbox(LocalSandbox):
    """A sandbox provider whose commands see only their workspace and have no network.

    Takes :class:`~helix_stream.LocalSandbox`'s arguments (``root_dir``, ``env``, ``timeout``,
    ``max_output_bytes``, ``description``) and keeps its files the same way; each command runs
    under bubblewrap (Debian's ``bubblewrap`` package) in PID, IPC, network, UTS, mount and
    (where the kernel allows) user namespaces, with no capabilities. What it does not isolate:
    CPU, memory and disk use (no limits), the kernel (a kernel exploit escapes any namespace),
    and the system's programs and libraries, which it may read.

    Example::

        agent = hs.Agent(name="coder", model="helix/demo", tools=[run_tests],
                         sandbox=hs.BubblewrapSandbox("/var/tmp/helix"))

    Raises:
        FrameworkNotSupportedError: at ``create``/``attach``, when bubblewrap is not installed
            or cannot make namespaces here.
    """

    __slots__ = ()
    _isolated = True

    async def create(self, session: SessionInfo, agent: str) -> LocalSandboxSession:
        """The directory of ``agent`` in ``session`` (see ``LocalSandbox.create``)."""
        await asyncio.to_thread(_check)  # the first check starts bwrap once
        return await super().create(session, agent)

    async def attach(self, session: SessionInfo, sandbox_id: str) -> LocalSandboxSession:
        """The sandbox with this id (see ``LocalSandbox.attach``)."""
        await asyncio.to_thread(_check)  # the first check starts bwrap once
        return await super().attach(session, sandbox_id)

    def _kind(self) -> str:
        return (
            f"An isolated shell (/bin/sh): only the workspace ({WORKSPACE}, read-write), /tmp "
            "and the system's programs are there, and there is no network."
        )


def _check() -> None:
    if bwrap_path() is None:
        raise FrameworkNotSupportedError(_MISSING)
