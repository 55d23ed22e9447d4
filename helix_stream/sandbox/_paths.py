"""Logical ``/workspace`` paths: the one place that decides which paths a sandbox accepts.

A sandbox is addressed through logical paths under ``/workspace``, whatever its backend keeps
them in. :func:`workspace_parts` is the lexical rule every backend shares (pure: no file system):

- ``/workspace`` and ``/workspace/...`` are accepted; a relative path is taken relative to
  ``/workspace`` (where commands start);
- an absolute path anywhere else is refused, and so is any ``..`` part — even one that would
  land back inside (one rule a reader can check at a glance, not a normalisation to trust);
- ``.`` parts and repeated slashes are dropped; a NUL byte is refused.

:func:`resolve_within` adds what only a backend with a real directory can check: the path, with
every symbolic link followed (chains included), must still be inside that directory.
"""

from __future__ import annotations

import os

from ..errors import SandboxPathError

__all__ = ["WORKSPACE", "resolve_within", "workspace_parts", "workspace_path"]

WORKSPACE = "/workspace"


def workspace_parts(path: str) -> tuple[str, ...]:
    """The parts of a logical path below ``/workspace`` (``()`` for ``/workspace`` itself).

    Raises:
        SandboxPathError: the path leaves ``/workspace`` or is not a string.

    Example::

        assert workspace_parts("/workspace/src/app.py") == ("src", "app.py")
        assert workspace_parts("src//./app.py") == ("src", "app.py")
    """
    if not isinstance(path, str) or "\0" in path:
        raise SandboxPathError(f"{path!r} is not a path: give a string without NUL bytes.")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if path.startswith("/"):
        if not parts or parts[0] != WORKSPACE[1:]:
            raise SandboxPathError(
                f"{path!r} is outside {WORKSPACE}: a sandbox path is {WORKSPACE}/... or "
                "relative to it."
            )
        parts = parts[1:]
    if ".." in parts:
        raise SandboxPathError(
            f"{path!r} contains '..': name the file from {WORKSPACE} down, without '..'."
        )
    return tuple(parts)


def workspace_path(path: str) -> str:
    """The logical path in its one spelling: ``/workspace/a/b`` for ``a//./b``.

    Example::

        assert workspace_path("src//./app.py") == "/workspace/src/app.py"
    """
    return "/".join((WORKSPACE, *workspace_parts(path)))


def resolve_within(root: str, path: str) -> str:
    """The real path under ``root`` (a directory's real path) of a logical path.

    Symbolic links are followed, chains included; the result must be ``root`` or inside it.
    A path whose last parts do not exist yet resolves too (a file about to be written).

    Raises:
        SandboxPathError: the path leaves ``/workspace``, lexically or through a link.

    Example::

        import tempfile

        root = tempfile.mkdtemp()
        real = resolve_within(root, "/workspace/src/app.py")   # a path that may not exist yet
        assert real.startswith(root)
    """
    parts = workspace_parts(path)
    real = os.path.realpath(os.path.join(root, *parts))
    if real != root and not real.startswith(root + os.sep):
        raise SandboxPathError(
            f"{path!r} leads outside {WORKSPACE} through a symbolic link; links may only "
            f"point inside {WORKSPACE}."
        )
    return real
