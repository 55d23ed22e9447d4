"""The one place where the ``mcp`` package's, httpx2's and the OS's errors become ours.

A server that cannot be used (not started, unreachable, gone mid-call, refusing the
credentials) is a :class:`~helix_stream.errors.ToolProviderError` naming the server and what
to check. A server that is there but refuses one call, or answers it with something invalid,
is a :class:`~helix_stream.errors.ToolFailedError`: inside a run both become an error result
the model reads. No message carries a credential: the transport is described without its
arguments, user info or query, and every header or environment value the server was given is
redacted from text a server or a library produced.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import HelixError, ToolFailedError, ToolProviderAuthError, ToolProviderError
from ..telemetry._filters import redact
from ._transport import Seen, Transport

__all__ = ["call_error", "connect_error", "leaf", "timeout_error"]

# The JSON-RPC code the mcp package gives a request whose connection closed under it.
CONNECTION_CLOSED = -32000
# The code it gives a request whose HTTP response was an error without a JSON-RPC body.
_HTTP_ERROR = -32603


def leaf(exc: BaseException) -> BaseException:
    """The first real error inside the task groups' exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _text(exc: BaseException, secrets: Iterable[str]) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        # Without the file name an OSError carries: a server path is no client's business.
        return exc.strerror
    message = str(getattr(exc, "message", None) or exc) or type(exc).__name__
    return redact(message, {s for s in secrets if len(s) >= 4})


def _refused(server: str, transport: Transport, seen: Seen) -> ToolProviderAuthError | None:
    if seen.status not in (401, 403):
        return None
    assert seen.status is not None
    return ToolProviderAuthError(
        f"MCP server {server!r} at {transport.describe()} refused the credentials (HTTP "
        f"{seen.status}). Check the server's headers= or auth=, or the tools_context"
        f"[{server!r}] entry of the run.",
        server=server,
        status=seen.status,
        challenge=seen.challenge,
    )


def connect_error(
    exc: BaseException, *, server: str, transport: Transport, seen: Seen, secrets: Iterable[str]
) -> ToolProviderError:
    """Why connecting to ``server`` failed."""
    refused = _refused(server, transport, seen)
    if refused is not None:
        return refused
    error = leaf(exc)
    detail = f"{type(error).__name__}: {_text(error, secrets)}"
    if transport.kind == "stdio":
        if isinstance(error, OSError):
            hint = "Check the command, its arguments and cwd."
            what = f"could not be started: {transport.describe()} failed ({detail})."
        else:
            hint = "Check that it serves MCP on stdio; its stderr says why it stopped."
            what = f"({transport.describe()}) ended before it answered ({detail})."
    else:
        status = f" with HTTP {seen.status}" if seen.status else ""
        hint = "Check the URL and that the server is running."
        what = f"at {transport.describe()} could not be reached{status} ({detail})."
    return ToolProviderError(f"MCP server {server!r} {what} {hint}", server=server)


def timeout_error(server: str, transport: Transport, timeout: float) -> ToolProviderError:
    """``server`` did not finish connecting in time."""
    return ToolProviderError(
        f"MCP server {server!r} ({transport.describe()}) did not answer within {timeout:g} s. "
        "Check that it is an MCP server and that it starts (or raise connect_timeout=).",
        server=server,
    )


def call_error(
    exc: BaseException,
    *,
    server: str,
    transport: Transport,
    seen: Seen,
    secrets: Iterable[str],
    connected: bool,
) -> HelixError:
    """Why one request to ``server`` failed (``connected``: its connection is still up)."""
    error = leaf(exc)
    code = getattr(error, "code", None)
    # An HTTP refusal reaches the caller as the transport's stand-in error (-32603).
    refused = _refused(server, transport, seen) if code == _HTTP_ERROR else None
    if refused is not None:
        return refused
    if not connected or code == CONNECTION_CLOSED:
        return ToolProviderError(
            f"MCP server {server!r} ({transport.describe()}) closed the connection during the "
            "call; the call's outcome is unknown. The next call connects again.",
            server=server,
        )
    text = _text(error, secrets)
    if isinstance(code, int):
        return ToolFailedError(
            f"MCP server {server!r} refused the call: {text} (JSON-RPC error {code})",
            error_type=str(code),
        )
    return ToolFailedError(f"MCP server {server!r} gave an invalid answer: {text}")
