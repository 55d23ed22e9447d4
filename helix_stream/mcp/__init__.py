"""Tools from Model Context Protocol servers (the ``mcp`` extra: ``helix-stream[mcp]``).

::

    import helix_stream as hs

    github = hs.MCPServer.http("https://api.example.com/mcp", name="github",
                               request_headers={"Authorization"})
    async with github:
        tools = await github.tools(context={"headers": {"Authorization": token}})
        result = hs.stream_text(model="helix/demo", prompt="Open issues?", tools=tools,
                                tools_context={"github": {"headers": {"Authorization": token}}})

Importing this package does not import the ``mcp`` package: that happens at the first
connection (:class:`MCPOffer` and its rule need no ``mcp`` at all).
"""

from __future__ import annotations

from ._names import SEPARATOR
from ._offer import MCPOffer, MCPToolSpec
from ._server import MCPServer
from ._tool import ApprovalRule

__all__ = ["SEPARATOR", "ApprovalRule", "MCPOffer", "MCPServer", "MCPToolSpec"]
