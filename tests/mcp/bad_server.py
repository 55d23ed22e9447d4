"""An MCP server over stdio that misbehaves on purpose, written by hand (the SDK's server would
never send what it sends). Its tools: ``echo`` answers; ``garbage`` answers with a line that is
not JSON; ``malformed`` with an error object whose code is not a number and that has no
message; ``silent`` never answers; ``huge`` answers with a text of 10 MB (``HUGE`` bytes: far
more than a provider takes in one request), one line of ``x`` per KiB. It appends its pid to ``$HELIX_MCP_STATE/starts`` when it
starts (a reset connection is a new process).

    python tests/mcp/bad_server.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    }
    for name in ("echo", "garbage", "malformed", "silent", "huge")
]
HUGE = 10 * 1024 * 1024


def send(message: dict[str, Any] | str) -> None:
    line = message if isinstance(message, str) else json.dumps(message)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def answer(request: dict[str, Any]) -> None:
    method, rid = request.get("method"), request.get("id")
    if rid is None:
        return  # a notification
    if method == "initialize":
        version = request["params"]["protocolVersion"]
        result = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "bad", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name, args = request["params"]["name"], request["params"].get("arguments") or {}
        if name == "garbage":
            send("this is not json {")
        elif name == "malformed":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": "oops"}})
        elif name == "echo":
            content = [{"type": "text", "text": args.get("text", "")}]
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": content, "isError": False}})
        elif name == "huge":
            content = [{"type": "text", "text": ("x" * 1023 + "\n") * (HUGE // 1024)}]
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": content, "isError": False}})
        # "silent": nothing, ever
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        send({"jsonrpc": "2.0", "id": rid, "error": error})


def main() -> None:
    state = Path(os.environ.get("HELIX_MCP_STATE", "."))
    with open(state / "starts", "a") as out:
        out.write(f"{os.getpid()}\n")
    for line in sys.stdin:
        if line.strip():
            answer(json.loads(line))


if __name__ == "__main__":
    main()
