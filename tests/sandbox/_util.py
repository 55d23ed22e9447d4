"""Shared helpers of the sandbox tests: a session to make sandboxes for, a process check."""

from __future__ import annotations

from pathlib import Path

from helix_stream.state import SessionInfo, TurnInfo


def session(session_id: str = "session-1") -> SessionInfo:
    return SessionInfo(id=session_id, turn=TurnInfo(id="turn-1", sequence=1))


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie waiting to be reaped is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    # The state follows the parenthesised command name: "R", "S", ..., "Z" for a zombie.
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def running(*argv: str) -> list[int]:
    """The pids (on this machine) of the processes whose command line is exactly ``argv``:
    a command in a PID namespace reports pids of its own, which mean nothing here."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == wanted and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
