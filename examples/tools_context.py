"""Tools with ``tools_context``: per-request secrets and settings a tool needs, never the model.

A tool declares a ``context_schema``; each run passes ``tools_context={tool_name: {...}}``. The
tool gets only its own entry, validated and read-only, in ``ctx.context`` — not the runtime
context, not another tool's entry — and none of it is sent to the model (AI SDK v7
``toolsContext``). Through the server, ``run_options(request, auth)`` builds it per request,
here from the authenticated user.

Run it:

    python examples/tools_context.py            # http://127.0.0.1:8003/api/chat
    python examples/tools_context.py --once     # an offline self-check through httpx
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel
from starlette.requests import Request

import helix_stream as hs
from helix_stream.errors import AuthenticationError
from helix_stream.server import create_app

# Per-user credentials for a backend the tool calls (a secret store, in real life).
CRM_KEYS = {"alice": ("crm-key-alice-7f3a", "eu-west"), "bob": ("crm-key-bob-91c2", "us-east")}


class CrmContext(BaseModel):
    """What ``lookup_order`` needs besides its input: the caller's CRM key and region."""

    api_key: str
    region: str


@hs.tool(context_schema=CrmContext)
async def lookup_order(order_id: int, ctx: hs.ToolContext) -> dict[str, Any]:
    """Look up an order by its number."""
    crm: CrmContext = ctx.context  # this tool's entry only, validated and frozen
    # A real tool would call the CRM with crm.api_key; the demo answers from the region.
    return {"order_id": order_id, "status": "shipped", "warehouse": crm.region}


def authenticate(request: Request) -> str:
    user = request.headers.get("x-user", "")
    if user not in CRM_KEYS:
        raise AuthenticationError("send 'x-user: alice' or 'x-user: bob'")
    return user


def run_options(request: Request, user: str) -> dict[str, Any]:
    """Per request: the tool's context from the caller (never from the request body)."""
    api_key, region = CRM_KEYS[user]
    return {"tools_context": {"lookup_order": {"api_key": api_key, "region": region}}}


executor = hs.Executor()
agent = hs.Agent(
    name="support", system="You help with orders.", model="helix/demo", tools=[lookup_order]
)
app = create_app(executor, agent, authenticate, run_options=run_options)


async def run_once() -> list[str]:
    """Ask about an order as alice and as bob; return what each got."""
    lines = []
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://example") as client:
        for user in ("alice", "bob"):
            text = {"type": "text", "text": "Please lookup order 42"}
            body = {
                "id": f"{user}-chat",
                "messages": [{"id": "u1", "role": "user", "parts": [text]}],
            }
            response = await client.post("/api/chat", json=body, headers={"x-user": user})
            chunks = [
                json.loads(x[6:]) for x in response.text.split("\n\n") if x.startswith("data: {")
            ]
            output = next(c["output"] for c in chunks if c["type"] == "tool-output-available")
            lines.append(f"{user}: lookup_order -> {json.dumps(output)}")
            # The key never reaches the client: it is not in the stream.
            assert CRM_KEYS[user][0] not in response.text
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--once", action="store_true", help="an offline self-check, then exit")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8003)
    args = parser.parse_args(argv)
    if args.once:
        print("\n".join(asyncio.run(run_once())))
        return 0
    import uvicorn

    uvicorn.run(app, host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
