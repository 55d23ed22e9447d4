"""Running one sandbox command as a local process: its environment, output cap, timeout and end.

- The command (``/bin/sh -c <command>``, inside the namespaces ``_confine`` chose) runs in a
  new session, so everything it starts shares one process group, and ending the group ends
  them all (and with them a namespace's processes, which die with its first one).
- The environment is exactly what the caller passes: nothing of the app's own environment
  (API keys, tokens) is inherited.
- stdout and stderr are each kept up to ``cap`` bytes; what comes after is read and dropped
  (so the command never blocks on a full pipe) and the result says ``truncated``.
- When the shell exits, what it left running in its group is killed: a command's background
  processes end with it. On timeout or cancellation the whole group is killed at once.

On the host (no namespaces), a process that leaves the group itself (``setsid``) is out of
reach.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Mapping, Sequence

from .._sandbox_protocol import SandboxResult
from ..errors import SandboxTimeoutError

__all__ = ["run_shell"]

_READ_SIZE = 65_536
# After the group is killed, how long its pipes may take to close before reading stops.
_DRAIN_GRACE = 2.0


class _Capped:
    """Reads a stream to its end, keeping at most ``cap`` bytes."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_READ_SIZE):
            room = max(0, self.cap - len(self.data))
            self.data += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        if not self.dropped:
            return self.data.decode("utf-8", errors="replace")
        # Not final: a character the cap cut in half is left out, not shown as U+FFFD.
        return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(bytes(self.data))


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Also says when the shell itself has exited: ``Process.wait()`` waits for the pipes to
    close as well, and a background process the command started may hold them open."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=_READ_SIZE, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


def _kill_group(pid: int) -> None:
    # The shell leads its own group (start_new_session), so its pid is the group's id.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _finish_reading(readers: list[asyncio.Task[None]]) -> None:
    """Let the readers reach the end of their pipes, then stop any that cannot."""
    _, pending = await asyncio.wait(readers, timeout=_DRAIN_GRACE)
    for task in pending:
        task.cancel()
    await asyncio.gather(*readers, return_exceptions=True)


async def run_shell(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout: float, cap: int
) -> SandboxResult:
    """Run ``argv`` (a ``/bin/sh -c`` line, maybe in namespaces) in ``cwd`` with exactly ``env``.

    Raises:
        SandboxTimeoutError: it ran past ``timeout`` seconds (the group was killed).
        asyncio.CancelledError: the caller was cancelled (the group was killed first).
    """
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(loop),
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    pid = transport.get_pid()
    assert protocol.stdout is not None and protocol.stderr is not None
    out, err = _Capped(cap), _Capped(cap)
    readers = [
        asyncio.ensure_future(out.drain(protocol.stdout)),
        asyncio.ensure_future(err.drain(protocol.stderr)),
    ]
    try:
        async with asyncio.timeout(timeout):
            # Shielded: a timeout or a cancellation must not cancel the future itself.
            await asyncio.shield(protocol.exited)
            _kill_group(pid)  # what the command left running in the background
            await asyncio.gather(*readers)
    except TimeoutError:
        await _end(pid, protocol, readers)
        raise SandboxTimeoutError(timeout, stdout=out.text(), stderr=err.text()) from None
    except BaseException:
        # Cancelled (or failed): nothing the command started may outlive the call.
        await asyncio.shield(_end(pid, protocol, readers))
        raise
    finally:
        transport.close()  # the pipes, even one a process outside the group still holds
    exit_code = transport.get_returncode()
    assert exit_code is not None
    return SandboxResult(
        exit_code=exit_code,
        stdout=out.text(),
        stderr=err.text(),
        truncated=bool(out.dropped or err.dropped),
    )


async def _end(pid: int, protocol: _Protocol, readers: list[asyncio.Task[None]]) -> None:
    _kill_group(pid)
    await protocol.exited
    await _finish_reading(readers)
