"""A server's connections: one per distinct set of per-request credentials, at most ``limit``.

Why not one connection for everyone, with each request's headers on it: an MCP session belongs
to one principal. A stateful server keeps per-session state (subscriptions, elicitations, its
``Mcp-Session-Id``), and the MCP authorization rules have a server bind a session to the user
it authenticated; a stdio server gets its credentials once, in its environment, when it starts.
Mixing users on one session would hand one user's session to another. So calls without
credentials share one connection, and each distinct credential set gets its own, opened lazily
and kept for the next call with the same set.

Bounded: past ``limit`` sets, the least recently used connection is retired (it closes once its
calls in flight are done); a dead one (the server exited, the network broke) is dropped when
next needed and a fresh one opened in its place.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable

from ..errors import ToolProviderError
from ._connection import Connection
from ._credentials import Credentials

__all__ = ["Pool"]


class Pool:
    """Connections by credentials (see the module docstring)."""

    def __init__(
        self, factory: Callable[[Credentials], Connection], *, limit: int, timeout: float
    ) -> None:
        self._factory = factory
        self._limit = limit
        self._timeout = timeout
        self._open: OrderedDict[Credentials, Connection] = OrderedDict()
        self._retired: set[Connection] = set()

    def __len__(self) -> int:
        return len(self._open)

    async def acquire(self, credentials: Credentials) -> Connection:
        """The connection for ``credentials``, connecting if needed.

        Raises:
            ToolProviderError: connecting failed (the next acquire tries again).
        """
        connection = self._open.get(credentials)
        if connection is not None and not connection.usable:
            self._drop(credentials)
            connection = None
        if connection is None:
            while len(self._open) >= self._limit:
                self._drop(next(iter(self._open)))
            connection = self._factory(credentials)
            self._open[credentials] = connection
        self._open.move_to_end(credentials)
        try:
            await connection.start(self._timeout)
        except ToolProviderError:  # it closed itself; a cancelled caller leaves it connecting
            if self._open.get(credentials) is connection:
                del self._open[credentials]
            raise
        return connection

    def _drop(self, credentials: Credentials) -> None:
        connection = self._open.pop(credentials)
        connection.retire()
        self._retired = {c for c in self._retired if not c.closed}
        self._retired.add(connection)

    async def aclose(self) -> None:
        """Close every connection, waiting for each server to be let go."""
        closing = [*self._open.values(), *self._retired]
        self._open.clear()
        self._retired.clear()
        if closing:
            await asyncio.gather(*(connection.aclose() for connection in closing))
