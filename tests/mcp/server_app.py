"""The MCP server the MCP tests start: the ``mcp`` package's own server API, as a subprocess.

    python tests/mcp/server_app.py stdio        # MCP on stdin/stdout
    python tests/mcp/server_app.py http         # prints its port, then serves /mcp and /sse

``HELIX_MCP_STATE`` names a folder the server reports into and is steered from: it appends
each call's tool name to ``calls``, each ``tools/list`` to ``lists``, each cancelled call to ``cancelled``, its pid to
``starts`` when it starts; tools named in ``hidden`` (one per line) are not listed and cannot be called. Over
``HELIX_MCP_TOKENS`` (``token=user,...``) names the users ``whoami`` answers for (never the
token): from ``Authorization: Bearer <token>`` over HTTP, where every request then needs one
(else 401 with an OAuth challenge), or from ``HELIX_TEST_TOKEN`` in a stdio server's environment.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path
from typing import Any

from mcp import MCPError
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextContent, TextResourceContents
from pydantic import BaseModel

STATE = Path(os.environ.get("HELIX_MCP_STATE", "."))
TOKENS = dict(
    pair.split("=", 1) for pair in os.environ.get("HELIX_MCP_TOKENS", "").split(",") if pair
)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # 1032 bytes


def _note(file: str, line: str) -> None:
    with open(STATE / file, "a") as out:
        out.write(line + "\n")


def _hidden() -> set[str]:
    path = STATE / "hidden"
    return set(path.read_text().split()) if path.exists() else set()


class TestServer(MCPServer):
    """Lists and calls only the tools not named in ``hidden``."""

    async def list_tools(self) -> Any:
        _note("lists", "tools/list")
        hidden = _hidden()
        return [tool for tool in await super().list_tools() if tool.name not in hidden]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name in _hidden():
            raise ToolError(f"Unknown tool: {name}")
        _note("calls", name)
        return await super().call_tool(name, arguments, context)


mcp = TestServer("helix-test")


class Forecast(BaseModel):
    city: str
    temp_c: int
    sky: str


@mcp.tool()
def forecast(city: str) -> Forecast:
    """The weather forecast for a city."""
    return Forecast(city=city, temp_c=21, sky="sunny")


@mcp.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@mcp.tool()
def chart() -> Image:
    """A chart, as a PNG image."""
    return Image(data=PNG, format="png")


@mcp.tool(structured_output=False)
def report() -> list[Any]:
    """A report: a text and an embedded text resource."""
    resource = TextResourceContents(
        uri="file:///report.txt", mime_type="text/plain", text="all good"
    )
    return [
        TextContent(type="text", text="summary"),
        EmbeddedResource(type="resource", resource=resource),
    ]


@mcp.tool()
def fail(reason: str) -> str:
    """Always fails."""
    raise ToolError(f"failed because {reason}")


@mcp.tool()
def refuse() -> str:
    """Answers with a JSON-RPC error instead of a result."""
    raise MCPError(code=-32602, message="no such account")


@mcp.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Takes its time."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        _note("cancelled", f"slow {ctx.request_id}")
        raise
    return "done"


@mcp.tool()
def whoami(ctx: Context) -> str:
    """Who the caller is (from its token; the token itself is never answered)."""
    headers = ctx.headers or {}
    meta = ctx.request_context.meta or {}
    if meta.get("traceparent"):
        _note("traces", str(meta["traceparent"]))
    if headers.get("mcp-session-id"):
        _note("sessions", headers["mcp-session-id"])
    if ctx.headers is not None:  # HTTP: the bearer token; stdio: the token in the environment
        token = headers.get("authorization", "").removeprefix("Bearer ")
    else:
        token = os.environ.get("HELIX_TEST_TOKEN", "")
    return TOKENS.get(token, "nobody")


@mcp.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool(name="notes.read")
def notes_read(title: str) -> str:
    """A tool whose name has a dot (MCP allows it; providers do not)."""
    return f"notes about {title}"


@mcp.tool()
def added_later(text: str) -> str:
    """A tool the tests hide first and list later."""
    return text.upper()


def _authorized(app: Any) -> Any:
    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and TOKENS:
            headers = dict(scope.get("headers") or [])
            token = headers.get(b"authorization", b"").decode().removeprefix("Bearer ")
            if token not in TOKENS:
                challenge = b'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth"'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"www-authenticate", challenge), (b"content-length", b"0")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await app(scope, receive, send)

    return guarded


def _serve_http() -> None:
    import uvicorn
    from starlette.applications import Starlette

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    streamable = mcp.streamable_http_app()
    app = Starlette(
        routes=[*streamable.routes, *mcp.sse_app().routes],
        lifespan=streamable.router.lifespan_context,
    )
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(_authorized(app), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    _note("starts", str(os.getpid()))
    if sys.argv[1] == "stdio":
        mcp.run()
    else:
        _serve_http()
