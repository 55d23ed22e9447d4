"""A child process of the multi-process PostgresStore tests.

Run as ``python -m tests.store._pg_child <role> <json args>``. Every role opens its own
PostgresStore (its own pool) on the test's schema, prints ``READY``, waits until the file
``args["go"]`` exists (so that all children start together), does its part, and prints one
JSON line with what it saw. Roles:

- ``enqueue_keys``: enqueue ``n`` requests with keys ``k0 … k{n-1}``, in batches run at once.
- ``cas``: ``set_status(sid, "running", expect=["idle"])`` on sessions ``cas-0 …``.
- ``produce``: enqueue ``n`` entries (no key) of ``1 + i % 3`` notices each.
- ``commit_loop``: alternate ``append_messages`` and ``commit_context`` until ``args["stop"]``.
- ``add_context``: ``Executor.add_context`` with a key, twice (the retry records nothing).
- ``run``: ``Executor.run`` an agent against the loopback server; its tool ``wait_for_flag``
  prints ``TOOL STARTED`` and returns once ``args["flag"]`` exists.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from pydantic import BaseModel

import helix_stream as hs
from helix_stream.store import PostgresStore
from tests._store import append_messages, commit_context


class FlagInput(BaseModel):
    name: str


async def wait_for_file(path: str) -> None:
    while not os.path.exists(path):
        await asyncio.sleep(0.002)


async def enqueue_keys(store: PostgresStore, args: dict[str, Any]) -> Any:
    async def one(i: int) -> int:
        items = [{"kind": "notice", "content": f"request {i}"}]
        return await store.enqueue_context(
            args["sid"], items, source="app", origin={"type": "app"}, key=f"k{i}"
        )

    results: list[int] = []
    for start in range(0, args["n"], args["batch"]):
        batch = range(start, min(start + args["batch"], args["n"]))
        results.extend(await asyncio.gather(*(one(i) for i in batch)))
    return results


async def cas(store: PostgresStore, args: dict[str, Any]) -> Any:
    return [
        await store.set_status(f"cas-{i}", "running", expect=["idle"]) for i in range(args["n"])
    ]


async def produce(store: PostgresStore, args: dict[str, Any]) -> Any:
    for i in range(args["n"]):
        items = [{"kind": "notice", "content": f"{args['name']}-{i}-{j}"} for j in range(1 + i % 3)]
        await store.enqueue_context(args["sid"], items, source="app", origin={"type": "app"})
    return args["n"]


async def commit_loop(store: PostgresStore, args: dict[str, Any]) -> Any:
    passes = rows = 0
    while not os.path.exists(args["stop"]):
        await append_messages(store, args["sid"], [{"role": "user", "content": f"m{passes}"}])
        rows += len(await commit_context(store, args["sid"]))
        passes += 1
    return {"passes": passes, "rows": rows}


async def add_context(store: PostgresStore, args: dict[str, Any]) -> Any:
    executor = hs.Executor(store=store)
    items = [hs.notice(text) for text in args["texts"]]
    first = await executor.add_context(args["sid"], items, key=args["key"])
    retry = await executor.add_context(args["sid"], items, key=args["key"])
    return [first, retry]


async def run(store: PostgresStore, args: dict[str, Any]) -> Any:
    async def wait_for_flag(input: FlagInput) -> str:
        print("TOOL STARTED", flush=True)
        await wait_for_file(args["flag"])
        return f"{input.name} is up"

    agent = hs.Agent(
        name="runner",
        model="openai/loopback",
        tools=[hs.tool(name="wait_for_flag", input_schema=FlagInput, execute=wait_for_flag)],
        settings={"api_base": args["api_base"], "api_key": "sk-loopback"},
    )
    try:
        return {"text": await hs.Executor(store=store).run(agent, args["sid"], "go").text()}
    except hs.SessionBusyError as exc:
        return {"busy": exc.code}


ROLES = {
    "enqueue_keys": enqueue_keys,
    "cas": cas,
    "produce": produce,
    "commit_loop": commit_loop,
    "add_context": add_context,
    "run": run,
}


async def main(role: str, args: dict[str, Any]) -> None:
    store = PostgresStore(args["dsn"], schema=args["schema"], max_size=args.get("pool", 4))
    try:
        await store.get_session("-")  # migrate and open the pool before the start line
        print("READY", flush=True)
        await wait_for_file(args["go"])
        result = await ROLES[role](store, args)
    finally:
        await store.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2])))
