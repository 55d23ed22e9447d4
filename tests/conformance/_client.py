"""Run the AI SDK's own client (the ``ai`` npm package, v5/v6/v7) against a live server.

Reusable by any test that serves the UI message stream::

    from ._client import run_client, serve_app   # or: from conformance._client import ...

    with serve_app(app) as base_url:
        result = run_client(f"{base_url}/api/chat", {"messages": [...]}, version=6)
    assert result["error"] is None
    assert result["finalMessage"]["parts"] == [...]

``run_client`` installs ``ai@<version>`` (and a zod that all three accept as peer) with npm
into ``<repo>/.cache/conformance/ai<version>`` the first time (reused afterwards), then runs
``client.mjs`` there: ``DefaultChatTransport.sendMessages`` (every chunk validated by the
package's ``uiMessageChunkSchema``) folded by ``readUIMessageStream``. It returns
``{"chunks", "finalMessage", "error", "errors", "aiVersion"}``; ``error`` is the first of
``errors`` (``{"name", "message"}``: a rejected chunk, an HTTP failure, or an ``error`` chunk).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import uvicorn

__all__ = [
    "AI_VERSIONS",
    "ensure_ai",
    "missing_node_reason",
    "run_chat",
    "run_client",
    "serve_app",
]

AI_VERSIONS = (5, 6, 7)
# ai@5, ai@6 and ai@7 all declare the peer "zod": "^3.25.76 || ^4.1.8".
ZOD_SPEC = "zod@^4.1.8"
ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "conformance"
CLIENT_SCRIPT = Path(__file__).with_name("client.mjs")
CHAT_SCRIPT = Path(__file__).with_name("chat.mjs")


def missing_node_reason() -> str | None:
    """Why the conformance tests cannot run here (``None`` when node and npm are present)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not found on PATH; the AI SDK client needs Node.js 18+"
    return None


def _installed_major(folder: Path) -> int | None:
    try:
        manifest = json.loads((folder / "node_modules" / "ai" / "package.json").read_text())
        return int(str(manifest["version"]).split(".")[0])
    except (OSError, ValueError, KeyError):
        return None


def ensure_ai(version: int) -> Path:
    """Install ``ai@<version>`` into its test-owned folder unless it is there already.

    Raises:
        RuntimeError: npm failed (the output is in the message); this must fail a test,
            not skip it.
    """
    folder = CACHE / f"ai{version}"
    folder.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".ai{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test workers install once
        if _installed_major(folder) != version:
            npm = shutil.which("npm") or "npm"
            command = [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund"]
            proc = subprocess.run(
                [*command, f"ai@{version}", ZOD_SPEC],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if proc.returncode != 0 or _installed_major(folder) != version:
                raise RuntimeError(
                    f"npm install ai@{version} {ZOD_SPEC} into {folder} failed "
                    f"(exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
                )
        for original in (CLIENT_SCRIPT, CHAT_SCRIPT):
            script = folder / original.name
            source = original.read_bytes()
            if not script.exists() or script.read_bytes() != source:
                script.write_bytes(source)  # must sit next to node_modules/ to import "ai"
    return folder


def run_client(url: str, body: dict[str, Any], version: int) -> dict[str, Any]:
    """POST ``body`` to ``url`` with the ``ai@<version>`` client; return what it saw.

    ``body`` is the request body ``useChat`` would send: ``id``, ``messages``, ``trigger``,
    ``messageId`` and any extra keys (sent as the transport's ``body``).
    """
    folder = ensure_ai(version)
    proc = subprocess.run(
        [shutil.which("node") or "node", str(folder / CLIENT_SCRIPT.name), url, json.dumps(body)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"client.mjs failed (exit {proc.returncode}):\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_chat(url: str, scenario: dict[str, Any], version: int) -> dict[str, Any]:
    """Drive the ``ai@<version>`` package's own chat (``AbstractChat``, what ``useChat``
    wraps) through ``scenario`` (see ``chat.mjs``); return its state after each action."""
    folder = ensure_ai(version)
    proc = subprocess.run(
        [shutil.which("node") or "node", str(folder / CHAT_SCRIPT.name), url, json.dumps(scenario)],
        capture_output=True,
        text=True,
        timeout=90,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        raise RuntimeError(f"chat.mjs failed (exit {proc.returncode}):\n{proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


@contextlib.contextmanager
def serve_app(app: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on 127.0.0.1 (a free port, a background thread).

    Yields the base URL; the server is shut down on exit.
    """
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    # Generous: the app's startup imports litellm, seconds on a busy machine.
    deadline = time.monotonic() + 90
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
