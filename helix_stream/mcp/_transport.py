"""How to reach a server: a stdio subprocess, or an HTTP endpoint (streamable HTTP or SSE).

Each transport is a frozen description; :meth:`open` makes the ``mcp`` package's transport for
one connection, with that connection's credentials applied (per-request headers over the
server's own, per-request environment variables over the server's ``env``). What an HTTP
server answers about the connection (its ``Mcp-Session-Id``, the status and challenge of a
refusal) is noted on a :class:`Seen` for telemetry and for the error a refusal becomes.

``describe()`` is what an error message may say about the transport: the command's name without
its folder or arguments, the URL without user info or query (either may hold a secret, and an
error text may reach an HTTP client, which must not learn the server's paths).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TextIO
from urllib.parse import urlsplit

from ..errors import InvalidRequestError
from ._credentials import Credentials

if TYPE_CHECKING:
    from mcp.client._transport import TransportStreams

__all__ = [
    "HttpTransport",
    "Seen",
    "StdioTransport",
    "Transport",
    "http_transport",
    "safe_url",
    "stdio_transport",
]

# The mcp package's defaults for HTTP: 30 s to connect and write, 5 min to read a stream.
_HTTP_TIMEOUT = 30.0
_SSE_READ_TIMEOUT = 300.0


class Seen:
    """What one connection's HTTP responses said (written by the transport, read after)."""

    __slots__ = ("challenge", "session_id", "status")

    def __init__(self) -> None:
        self.session_id: str | None = None
        self.status: int | None = None  # the last refusal's HTTP status (>= 400)
        self.challenge: str | None = None  # its WWW-Authenticate header

    async def response(self, response: Any) -> None:
        """An httpx2 response hook."""
        session = response.headers.get("mcp-session-id")
        if session:
            self.session_id = session
        if response.status_code >= 400:
            self.status = response.status_code
            self.challenge = response.headers.get("www-authenticate")

    def sse_session(self, session_id: str) -> None:
        """The SSE transport's ``on_session_created`` callback."""
        self.session_id = session_id


def _stderr() -> TextIO:
    """Where a stdio server's stderr goes: the app's, so that a server that fails to start
    says why there. A subprocess needs a real file: when ``sys.stderr`` is not one (a
    notebook, a captured test), the process's own stderr, or nowhere."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # the subprocess holds it


def safe_url(url: str) -> str:
    """``scheme://host[:port]/path``: nothing of a URL that may hold a credential."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(an invalid URL)"
    return f"{parts.scheme}://{host}{port}{parts.path}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioTransport:
    """A server the app starts as a subprocess and talks to over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    kind: Literal["stdio"] = "stdio"
    url: None = None

    def describe(self) -> str:
        # The program's name only: its folder is the server's own business, and an error
        # text may reach an HTTP client (the app's log has the rest).
        return f"the command {os.path.basename(self.command)!r}"

    def open(self, credentials: Credentials, seen: Seen) -> AbstractAsyncContextManager[Any]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=self.command,
            args=list(self.args),
            # Over the mcp package's safe defaults (PATH, HOME, ...; not the app's secrets).
            env={**dict(self.env), **dict(credentials.env)},
            cwd=self.cwd,
        )
        return stdio_client(params, errlog=_stderr())


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpTransport:
    """A server at a URL: streamable HTTP, or the older HTTP+SSE transport."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    auth: Any = None  # an httpx2.Auth (the mcp package's OAuth provider is one)
    kind: Literal["http", "sse"] = "http"

    def describe(self) -> str:
        return f"{safe_url(self.url)} ({'SSE' if self.kind == 'sse' else 'streamable HTTP'})"

    def open(self, credentials: Credentials, seen: Seen) -> AbstractAsyncContextManager[Any]:
        headers = _merge(self.headers, credentials.headers)
        if self.kind == "sse":
            return self._sse(headers, seen)
        return self._streamable(headers, seen)

    @asynccontextmanager
    async def _streamable(
        self, headers: dict[str, str], seen: Seen
    ) -> AsyncIterator[TransportStreams]:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(
            headers=headers,
            auth=self.auth,
            timeout=httpx2.Timeout(_HTTP_TIMEOUT, read=_SSE_READ_TIMEOUT),
            event_hooks={"response": [seen.response]},
        )
        async with client, streamable_http_client(self.url, http_client=client) as streams:
            yield streams

    @asynccontextmanager
    async def _sse(self, headers: dict[str, str], seen: Seen) -> AsyncIterator[TransportStreams]:
        import httpx2
        from mcp.client.sse import sse_client

        def client_factory(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            return httpx2.AsyncClient(
                headers=headers,
                timeout=timeout,
                auth=auth,
                event_hooks={"response": [seen.response]},
            )

        async with sse_client(
            self.url,
            headers=headers,
            timeout=_HTTP_TIMEOUT,
            sse_read_timeout=_SSE_READ_TIMEOUT,
            httpx_client_factory=client_factory,
            auth=self.auth,
            on_session_created=seen.sse_session,
        ) as streams:
            yield streams


def _merge(base: tuple[tuple[str, str], ...], extra: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The server's headers with a request's over them (header names are case-insensitive)."""
    merged = {name.lower(): (name, value) for name, value in base}
    merged.update({name.lower(): (name, value) for name, value in extra})
    return dict(merged.values())


Transport = StdioTransport | HttpTransport


def _strings(value: Mapping[str, str] | None, what: str) -> tuple[tuple[str, str], ...]:
    items = dict(value or {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
        raise InvalidRequestError(f"{what}= takes a mapping of strings to strings")
    return tuple(items.items())


def stdio_transport(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike[str] | None,
) -> StdioTransport:
    """``MCPServer.stdio``'s arguments, checked, as a transport.

    Raises:
        InvalidRequestError: no command, or arguments or environment that are not strings.
    """
    if not isinstance(command, str) or not command:
        raise InvalidRequestError("MCPServer.stdio() needs a command")
    if isinstance(args, str) or not all(isinstance(arg, str) for arg in args):
        raise InvalidRequestError("args= takes a list of strings")
    return StdioTransport(
        command=command,
        args=tuple(args),
        env=_strings(env, "env"),
        cwd=os.fspath(cwd) if cwd is not None else None,
    )


def http_transport(
    url: str, headers: Mapping[str, str] | None, auth: Any, transport: str
) -> HttpTransport:
    """``MCPServer.http``'s arguments, checked, as a transport (``auth``: an ``httpx2.Auth``).

    Raises:
        InvalidRequestError: not an http(s) URL, an unknown transport, or headers that are not
            strings.
    """
    if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
        raise InvalidRequestError("MCPServer.http() needs an http:// or https:// URL")
    if transport not in ("streamable-http", "sse"):
        raise InvalidRequestError(f"transport= is 'streamable-http' or 'sse', not {transport!r}")
    return HttpTransport(
        url=url,
        headers=_strings(headers, "headers"),
        auth=auth,
        kind="sse" if transport == "sse" else "http",
    )
