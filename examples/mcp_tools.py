"""An agent whose tools come from an MCP server: a local one, started over stdio.

The server is this file itself, run with ``--server`` (the ``mcp`` package's own server API).
The agent owns it (``Agent(tools=[server])``): it is started at the first turn that needs it,
shared by every session, and stopped by ``executor.close()``. Its tools are offered as
``meteo__forecast`` and ``meteo__alerts`` (the server's name, two underscores, the tool's
name), with the server's JSON schemas. A session keeps what the server offered at its first
turn, so that later turns offer the same tools, byte for byte, whatever the server lists by
then (``executor.refresh_tools(session_id)`` takes a new offer).

Needs the ``mcp`` extra (``pip install 'helix-stream[mcp]'``). Run it:

    python examples/mcp_tools.py "What is the weather forecast for Oslo?"
    python examples/mcp_tools.py --once     # an offline self-check (the embedded demo model)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

import helix_stream as hs
from helix_stream.chunks import TextDelta, ToolInputAvailable, ToolOutputAvailable


def serve() -> None:
    """The MCP server: two weather tools, over stdio."""
    from mcp.server.mcpserver import MCPServer as SDKServer

    weather = SDKServer("weather")

    @weather.tool()
    def forecast(city: str) -> dict[str, object]:
        """The weather forecast for a city."""
        return {"city": city, "forecast": "sunny", "temp_c": 21}

    @weather.tool()
    def alerts(region: str) -> str:
        """Active weather alerts for a region."""
        return f"No alerts for {region}."

    weather.run()  # stdio


async def ask(question: str) -> list[str]:
    """One turn of an agent using the weather server's tools; what it did, line by line."""
    server = hs.MCPServer.stdio(sys.executable, [__file__, "--server"], name="meteo")
    agent = hs.Agent(name="forecaster", system="You answer weather questions.", tools=[server])
    executor = hs.Executor()
    lines: list[str] = []
    names: dict[str, str] = {}
    answer = []
    try:
        offered = (await server.offer()).names()  # what a new session's first turn will keep
        async for chunk in executor.run(agent, "weather-chat", question):
            if isinstance(chunk, ToolInputAvailable):
                names[chunk.tool_call_id] = chunk.tool_name
            elif isinstance(chunk, ToolOutputAvailable):
                lines.append(f"{names[chunk.tool_call_id]} -> {json.dumps(chunk.output)}")
            elif isinstance(chunk, TextDelta):
                answer.append(chunk.delta)
    finally:
        await executor.close()  # stops the server process (an app's shutdown does this)
    return [f"tools: {', '.join(offered)}", *lines, f"answer: {''.join(answer)}"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question", nargs="?", default="What is the weather forecast for Paris?")
    parser.add_argument("--once", action="store_true", help="an offline self-check, then exit")
    parser.add_argument("--server", action="store_true", help="be the MCP server (stdio)")
    args = parser.parse_args(argv)
    if args.server:
        serve()
        return 0
    print("\n".join(asyncio.run(ask(args.question))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
