"""One live MCP session with one server, for one set of credentials.

The ``mcp`` package's client lives inside anyio task groups, and a task group must be entered
and left by the same task. So a connection has a task of its own, the *owner*: it opens the
client, says it is ready, waits until the connection is to close, and closes it. Requests come
from any task of the same event loop (the tools' tasks), concurrently: the client multiplexes
them. The owner runs in an empty ``contextvars`` context, since it outlives the call that
opened it and must not carry that call's span, session or tool context.

A connection knows when it is gone without a request failing first: the stream of messages
from the server is watched, and its end (a stdio server that exited, an HTTP transport that
broke) stops the connection at once, so the next use opens a new one instead of failing.

A connection whose server talks nonsense is reset the same way: a message that is not
JSON-RPC (a line that is not JSON, a malformed error object) stops it at once — the requests
in flight fail as error results the model reads ("the call's outcome is unknown"), and the
next call connects again — and a request that gets no answer within :data:`CALL_TIMEOUT`
seconds is given up and resets the connection too (a tool's own, shorter ``timeout=`` limit
cancels it first, without a reset). Without this, the ``mcp`` package would hold such a call
until a transport timeout, and a wedged server would keep every later call waiting.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, TypeVar

from ..errors import ToolProviderError
from ._credentials import Credentials
from ._errors import CONNECTION_CLOSED, call_error, connect_error, leaf, timeout_error
from ._transport import Seen, Transport

__all__ = ["Connection"]

T = TypeVar("T")
_CLIENT_NAME = "helix-stream"
_CLOSE_TIMEOUT = 10.0  # seconds a closing connection may take (stdio: the SDK's grace + kill)
_MAX_PAGES = 100  # a tools/list that never stops paginating cannot hang the caller
CALL_TIMEOUT = 30.0
"""Seconds an MCP request may wait for its answer (the default limit of an MCP tool call)."""


class Connection:
    """See the module docstring. Made and kept by the server's pool."""

    def __init__(
        self,
        *,
        server: str,
        transport: Transport,
        credentials: Credentials,
        protocol: str,
        secrets: frozenset[str],
    ) -> None:
        self.server = server
        self.transport = transport
        self.credentials = credentials
        self.seen = Seen()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.in_flight = 0
        self._protocol = protocol
        values = {value for _, value in (*credentials.headers, *credentials.env)}
        # A header's credential without its scheme too ("Bearer <token>": the token alone).
        values |= {value.split(" ", 1)[-1] for _, value in credentials.headers}
        self._secrets = secrets | values
        self._client: Any = None
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._retiring = False
        self._garbled: str | None = None  # why the server's messages could not be read

    @property
    def alive(self) -> bool:
        """Connected and not closing."""
        return self._client is not None and not self._stop.is_set()

    @property
    def usable(self) -> bool:
        """Connecting or connected, on the running event loop."""
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self.loop is here and not self._stop.is_set()

    @property
    def closed(self) -> bool:
        """Its owner task has ended (or never started)."""
        return self._task is None or self._task.done()

    @property
    def protocol_version(self) -> str | None:
        client = self._client
        return str(client.protocol_version) if client is not None else None

    async def start(self, timeout: float) -> None:
        """Connect (once; later callers wait for the same attempt).

        Raises:
            ToolProviderError: it did not start, was unreachable, refused or was too slow.
        """
        if self._task is None:
            self.loop = asyncio.get_running_loop()
            self._ready = self.loop.create_future()
            self._task = self.loop.create_task(self._own(), context=contextvars.Context())
        ready = self._ready
        assert ready is not None
        if ready.done() and not ready.cancelled() and ready.exception() is None:
            return
        self.in_flight += 1  # a caller waiting for the connection holds it as a call does
        try:
            await asyncio.wait_for(asyncio.shield(ready), timeout)
        except TimeoutError:
            await self.aclose()
            raise timeout_error(self.server, self.transport, timeout) from None
        except asyncio.CancelledError:
            raise  # the caller was cancelled; the attempt goes on for the next one
        except BaseException as exc:
            await self.aclose()
            raise connect_error(
                exc,
                server=self.server,
                transport=self.transport,
                seen=self.seen,
                secrets=self._secrets,
            ) from leaf(exc)
        finally:
            self._release()

    def _release(self) -> None:
        self.in_flight -= 1
        if self._retiring and not self.in_flight:
            self._stop.set()

    async def _own(self) -> None:
        ready = self._ready
        assert ready is not None
        try:
            async with self._session() as client:
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(ConnectionAbortedError("closed while connecting"))
            raise
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # anyio's task groups raise (base) exception groups
            # Before ready: start() reports it. After: the requests in flight saw the
            # connection close, and the next use opens a new one.
            if not ready.done():
                ready.set_exception(exc)
        finally:
            self._client = None
            self._stop.set()

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[Any]:
        from importlib.metadata import version

        from mcp import Client, Implementation

        streams = _watched(
            self.transport.open(self.credentials, self.seen), self._stop.set, self._garble
        )
        info = Implementation(name=_CLIENT_NAME, version=version("helix-stream"))
        async with Client(streams, mode=self._protocol, cache=None, client_info=info) as client:
            yield client

    async def request(self, send: Callable[[Any], Awaitable[T]]) -> T:
        """``await send(client)``, with its errors translated (and the connection dropped when
        it is gone).

        Raises:
            ToolProviderError: the connection is gone (before or during the request).
            ToolFailedError: the server refused the request or answered it with nonsense.
        """
        client = self._client
        if client is None or self._stop.is_set():
            raise ToolProviderError(
                f"MCP server {self.server!r}: the connection closed before the request was "
                "sent. The next call connects again.",
                server=self.server,
            )
        self.in_flight += 1
        self.seen.status = None
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                return await send(client)
        except TimeoutError:
            self._stop.set()  # a server that does not answer may be wedged: start afresh
            raise ToolProviderError(
                f"MCP server {self.server!r} did not answer within {CALL_TIMEOUT:g} s; the "
                "connection was reset and the call's outcome is unknown. The next call "
                "connects again.",
                server=self.server,
            ) from None
        except Exception as exc:
            if getattr(leaf(exc), "code", None) == CONNECTION_CLOSED:
                self._stop.set()
            if self._garbled is not None:
                raise ToolProviderError(
                    f"MCP server {self.server!r} sent a message that is not valid JSON-RPC "
                    f"({self._garbled}); the connection was reset and the call's outcome is "
                    "unknown. The next call connects again.",
                    server=self.server,
                ) from leaf(exc)
            raise call_error(
                exc,
                server=self.server,
                transport=self.transport,
                seen=self.seen,
                secrets=self._secrets,
                connected=self.alive,
            ) from leaf(exc)
        finally:
            self._release()

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists now, in MCP's wire form (all pages)."""

        async def send(client: Any) -> list[dict[str, Any]]:
            tools: list[dict[str, Any]] = []
            cursor = None
            for _ in range(_MAX_PAGES):
                page = await client.list_tools(cursor=cursor)
                tools += [
                    t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in page.tools
                ]
                cursor = page.next_cursor
                if cursor is None:
                    break
            return tools

        return await self.request(send)

    def _garble(self, error: Exception) -> None:
        """The server sent something that is not JSON-RPC: note why, and reset."""
        if self._garbled is None:
            self._garbled = type(error).__name__
        self._stop.set()

    def retire(self) -> None:
        """Close once the requests in flight are done (the pool evicted it)."""
        self._retiring = True
        if not self.in_flight:
            self._stop.set()

    async def aclose(self) -> None:
        """Close now and wait until the server is let go (a stdio server has exited)."""
        self._stop.set()
        task, ready = self._task, self._ready
        if task is None or task.done() or self.loop is not asyncio.get_running_loop():
            return  # nothing running, or on an event loop that is gone
        connecting = ready is not None and not ready.done()
        # Still connecting, the owner is not waiting for the stop: cancel it (the mcp package
        # still stops a stdio server on cancellation). Connected, it closes by itself.
        pending = {task} if connecting else (await asyncio.wait({task}, timeout=_CLOSE_TIMEOUT))[1]
        for stuck in pending:
            stuck.cancel()
            with suppress(asyncio.CancelledError):
                await stuck
        if ready is not None and ready.done() and not ready.cancelled():
            ready.exception()  # seen: a failed attempt is reported by start(), not logged


@asynccontextmanager
async def _watched(
    transport: AbstractAsyncContextManager[Any],
    on_end: Callable[[], None],
    on_garbage: Callable[[Exception], None],
) -> AsyncIterator[tuple[Any, Any]]:
    """The transport's streams, with the one from the server watched for its end and for
    what the transport could not read (which it passes on as an exception value)."""
    async with transport as (read, write):
        yield _WatchedRead(read, on_end, on_garbage), write


class _WatchedRead:
    """A read stream that calls ``on_end`` when it ends and ``on_garbage`` with a message it
    could not read (the mcp package's ``ReadStream``)."""

    def __init__(
        self, inner: Any, on_end: Callable[[], None], on_garbage: Callable[[Exception], None]
    ) -> None:
        self._inner = inner
        self._on_end = on_end
        self._on_garbage = on_garbage

    def _seen(self, message: Any) -> Any:
        if isinstance(message, Exception):
            self._on_garbage(message)
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)  # e.g. the context stream's ``last_context``

    async def receive(self) -> Any:
        import anyio

        try:
            return self._seen(await self._inner.receive())
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return self._seen(await self._inner.__anext__())
        except (StopAsyncIteration, anyio.ClosedResourceError):
            self._on_end()
            raise

    async def __aenter__(self) -> _WatchedRead:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc_info)
        return result
