"""Run a page's Python blocks in order, in one namespace, with no network.

Top-level ``await`` is allowed (as in an async REPL or a notebook): a block that awaits runs
on an event loop of its own. A connection to any host but the loopback is refused.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, ModuleType
from typing import Any

from tests.docs._blocks import Block

_LOCAL = {"127.0.0.1", "::1", "localhost", "0.0.0.0"}


@contextmanager
def loopback_only() -> Iterator[None]:
    """Refuse connections and name lookups for anything but the loopback."""
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and address[0] not in _LOCAL:
            raise ConnectionRefusedError(f"docs test: no network ({address[0]})")
        return connect(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in _LOCAL and host is not None:
            raise socket.gaierror(f"docs test: no network ({host})")
        return getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_getaddrinfo
    try:
        yield
    finally:
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.getaddrinfo = getaddrinfo


def compile_blocks(page_blocks: list[Block]) -> list[CodeType]:
    """The blocks compiled (in the calling thread: CPython 3.11's parser state is shared, and a
    compile in a worker thread while another thread parses can fail)."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    return [compile(block.code, block.where, "exec", flags=flags) for block in page_blocks]


def run_blocks(codes: list[CodeType], workdir: str) -> ModuleType:
    """Run the compiled blocks in order in one module namespace (in ``workdir``); return it."""
    module = ModuleType("docs_page")
    cwd = os.getcwd()
    os.chdir(workdir)
    try:
        with loopback_only():
            for code in codes:
                result = eval(code, module.__dict__)
                if inspect.iscoroutine(result):
                    asyncio.run(result)
    finally:
        os.chdir(cwd)
    return module
