"""``helix-stream`` / ``python -m helix_stream``: the demo.

``serve`` (the default) starts the chat server with the embedded demo model (``--workers N``
for N processes on one port, with a SQLite file or PostgreSQL store);
``chat`` streams a demo conversation, with a tool call, to the terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _chat(model: str) -> int:
    import helix_stream as hs
    from helix_stream import chunks as c

    @hs.tool
    def get_weather(city: str) -> dict[str, object]:
        """Current weather in a city."""
        return {"city": city, "forecast": "sunny", "temp_c": 21}

    async def run() -> None:
        executor = hs.Executor()
        agent = hs.Agent(
            name="demo",
            system="You are a helpful demo assistant.",
            model=model,
            tools=[get_weather],
        )
        turns: list[tuple[str, list[dict[str, str]]]] = [
            ("Hello!", []),
            ("What is the weather in Paris?", []),
            ("Thanks!", [hs.instruction("Answer in one sentence.")]),
            ("What are your instructions?", []),
        ]
        for prompt, context in turns:
            if context:
                await executor.add_context("demo", context)
                print(f"   [app adds context: {context[0]['content']}]")
            print(f"you> {prompt}")
            print("bot> ", end="", flush=True)
            async for chunk in executor.run(agent, "demo", prompt):
                if isinstance(chunk, c.TextDelta):
                    print(chunk.delta, end="", flush=True)
                elif isinstance(chunk, c.ToolInputAvailable):
                    print(f"[calls {chunk.tool_name}({chunk.input})] ", end="", flush=True)
                elif isinstance(chunk, c.ToolOutputAvailable):
                    print(f"[result {chunk.output}] ", end="", flush=True)
                elif isinstance(chunk, c.ErrorChunk):
                    print(f"[error: {chunk.error}]", end="")
            print()

    asyncio.run(run())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``helix-stream`` console script."""
    from . import __version__

    parser = argparse.ArgumentParser(prog="helix-stream", description=__doc__)
    parser.add_argument("--version", action="version", version=f"helix-stream {__version__}")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the demo chat server (default)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--model", default="helix/demo-slow", help="a litellm model string")
    serve.add_argument(
        "--store", default="helix-demo.db", help="a SQLite file, :memory:, or a postgres:// URL"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        help="uvicorn worker processes (above 1: a SQLite file or postgres:// store)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="connections to the model provider at once, per process (default 4096)",
    )
    chat = sub.add_parser("chat", help="stream a demo conversation to the terminal")
    chat.add_argument("--model", default="helix/demo")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["serve", *argv]  # `serve` is the default command
    args = parser.parse_args(argv)
    if args.command == "chat":
        return _chat(args.model)
    from .server._demo import serve_demo

    return serve_demo(
        host=args.host,
        port=args.port,
        model=args.model,
        store=args.store,
        workers=args.workers,
        max_connections=args.max_connections,
    )


if __name__ == "__main__":
    sys.exit(main())
