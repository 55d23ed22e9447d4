"""A loopback TCP relay between a PostgresStore and the test server that can break a connection
at the worst moment: around ``COMMIT``.

It speaks just enough of the PostgreSQL wire protocol to find message boundaries (a type byte
and a length; the startup message has no type byte), so it can see the client send ``COMMIT``
(a simple ``Query`` or an extended-protocol ``Parse``) and the server answer it
(``CommandComplete "COMMIT"``). Armed with one fault, it breaks the next ``COMMIT`` it sees:

- ``"drop-commit"``: the ``COMMIT`` never reaches the server; both sides are closed, so the
  server rolls the transaction back;
- ``"lose-commit-reply"``: the server gets the ``COMMIT`` and commits; the client never gets the
  answer (its side is closed once the server has answered);
- ``"hold-commit"``: the ``COMMIT`` never reaches the server, the client's side is closed, and
  the server's side is left open: its backend sits in the open transaction (as when a network
  partition hides the client's loss from the server) until someone ends it.

``refuse`` makes new connections fail at once (a server that is down), and :meth:`cut_all`
closes every relayed connection (a restart). The DSN it gives disables TLS and GSS encryption:
the relay must read the bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from dataclasses import dataclass, field
from typing import Literal

Fault = Literal["drop-commit", "lose-commit-reply", "hold-commit"]
_UNTYPED_STARTUP = 196608  # protocol 3.0; SSL/GSS/cancel requests carry other codes


def _is_commit(kind: bytes, body: bytes) -> bool:
    if kind == b"Q":
        return body.rstrip(b"\0") == b"COMMIT"
    if kind == b"P":  # name \0 query \0 ...
        parts = body.split(b"\0", 2)
        return len(parts) > 1 and parts[1] == b"COMMIT"
    return False


@dataclass
class _Relay:
    client: asyncio.StreamWriter
    server: asyncio.StreamWriter
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    cut_after_commit_reply: bool = False

    def close_client(self) -> None:
        self.client.transport.abort()

    def close_server(self) -> None:
        self.server.transport.abort()


class PgProxy:
    """``async with PgProxy(host, port) as proxy: store = PostgresStore(proxy.dsn(...))``."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.armed: Fault | None = None
        self.refuse = False
        self.triggered: list[Fault] = []  # the faults made, in order
        self.server_committed = asyncio.Event()  # set when a lost reply was a COMMIT's
        self._relays: list[_Relay] = []
        self._held: list[asyncio.StreamWriter] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._listener: asyncio.Server | None = None
        self.listen_port = 0

    async def __aenter__(self) -> PgProxy:
        self._listener = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.listen_port = self._listener.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.cut_all()
        for writer in self._held:
            writer.transport.abort()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        assert self._listener is not None
        self._listener.close()
        await self._listener.wait_closed()

    def dsn(self, user: str, dbname: str) -> str:
        return (
            f"host=127.0.0.1 port={self.listen_port} user={user} dbname={dbname}"
            " sslmode=disable gssencmode=disable"
        )

    def arm(self, fault: Fault) -> None:
        """Break the next COMMIT that goes through, once."""
        self.armed = fault

    def cut_all(self) -> None:
        """Close every relayed connection, both sides (as a server restart does)."""
        for relay in self._relays:
            relay.close_client()
            relay.close_server()
            for task in relay.tasks:
                task.cancel()
        self._relays.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refuse:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.transport.abort()
            return
        relay = _Relay(client=writer, server=up_writer)
        self._relays.append(relay)
        relay.tasks = [
            asyncio.create_task(self._client_to_server(relay, reader)),
            asyncio.create_task(self._server_to_client(relay, up_reader)),
        ]
        self._tasks.extend(relay.tasks)

    async def _client_to_server(self, relay: _Relay, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:  # untyped messages until the startup message itself
                head = await reader.readexactly(8)
                length, code = struct.unpack("!ii", head)
                rest = await reader.readexactly(length - 8)
                relay.server.write(head + rest)
                if code == _UNTYPED_STARTUP:
                    break
            while True:
                kind = await reader.readexactly(1)
                (length,) = struct.unpack("!i", await reader.readexactly(4))
                body = await reader.readexactly(length - 4)
                if self.armed is not None and _is_commit(kind, body):
                    fault, self.armed = self.armed, None
                    self.triggered.append(fault)
                    if fault == "lose-commit-reply":
                        relay.cut_after_commit_reply = True
                    else:
                        relay.close_client()
                        if fault == "drop-commit":
                            relay.close_server()
                        else:  # hold-commit: the server's side stays open, in the transaction
                            self._held.append(relay.server)
                            self._relays.remove(relay)
                        return
                relay.server.write(kind + struct.pack("!i", length) + body)

    async def _server_to_client(self, relay: _Relay, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while True:
                kind = await reader.readexactly(1)
                (length,) = struct.unpack("!i", await reader.readexactly(4))
                body = await reader.readexactly(length - 4)
                if relay.cut_after_commit_reply:
                    if kind == b"C" and body.rstrip(b"\0") == b"COMMIT":
                        self.server_committed.set()
                        relay.close_client()
                        relay.close_server()
                        return
                    continue  # nothing more reaches the client
                relay.client.write(kind + struct.pack("!i", length) + body)
