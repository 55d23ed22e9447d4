"""200 concurrent SSE chats through uvicorn on loopback, with the embedded demo model.

Run: ``.venv/bin/python bench/bench_concurrent_chats.py`` (or ``make bench``).

The chat server (``create_app`` over a SQLiteStore, the demo agent's tools) runs in its own
process under uvicorn; this process opens 200 chats at once with httpx, each a tool round trip
("What is the weather in Paris?"), and checks that every stream is complete (a ``finish`` chunk,
the tool's output, ``[DONE]``). It reports time to first byte and to the end, p50 and p99.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CHATS = 200

SERVER = textwrap.dedent(
    """
    import sys, uvicorn
    import helix_stream as hs
    from helix_stream.server import create_app
    from helix_stream.server._demo import demo_agent

    executor = hs.Executor(store=hs.SQLiteStore(sys.argv[2]))
    app = create_app(executor, demo_agent("helix/demo"))
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=512)
    """
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def chat(client: httpx.AsyncClient, url: str, i: int) -> tuple[float, float]:
    body = {
        "id": f"bench-{i}",
        "trigger": "submit-message",
        "messages": [
            {
                "id": f"u-{i}",
                "role": "user",
                "parts": [{"type": "text", "text": "What is the weather in Paris?"}],
            }
        ],
    }
    start = time.perf_counter()
    first = 0.0
    data: list[str] = []
    async with client.stream("POST", f"{url}/api/chat", json=body) as response:
        assert response.status_code == 200, response.status_code
        buffer = ""
        async for text in response.aiter_text():
            if not first:
                first = time.perf_counter() - start
            buffer += text
        data = [line[6:] for line in buffer.split("\n") if line.startswith("data: ")]
    total = time.perf_counter() - start
    assert data[-1] == "[DONE]", data[-3:]
    chunks = [json.loads(d) for d in data[:-1]]
    assert chunks[-1]["type"] == "finish", chunks[-1]
    assert any(c["type"] == "tool-output-available" for c in chunks)
    return first, total


def pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100)[p - 1] * 1000


async def main() -> int:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        server = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(port), str(Path(tmp) / "chats.db")], env=env
        )
        url = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient(
                timeout=120, limits=httpx.Limits(max_connections=CHATS)
            ) as client:
                for _ in range(300):  # wait for the server (litellm's import takes a few seconds)
                    try:
                        await client.get(f"{url}/api/chat/none/messages")
                        break
                    except httpx.TransportError:
                        await asyncio.sleep(0.1)
                await chat(client, url, -1)  # warm-up: litellm's first call
                start = time.perf_counter()
                results = await asyncio.gather(
                    *[chat(client, url, i) for i in range(CHATS)], return_exceptions=True
                )
                wall = time.perf_counter() - start
        finally:
            server.terminate()
            server.wait(10)
    failures = [r for r in results if isinstance(r, BaseException)]
    ok = [r for r in results if not isinstance(r, BaseException)]
    ttfb = [r[0] for r in ok]
    totals = [r[1] for r in ok]
    print(
        f"{CHATS} concurrent chats (tool round trip each) in {wall:.2f} s: {len(ok)} complete, {len(failures)} lost"
    )
    if ok:
        print(f"  time to first byte   p50 {pct(ttfb, 50):7.1f} ms   p99 {pct(ttfb, 99):7.1f} ms")
        print(
            f"  time to [DONE]       p50 {pct(totals, 50):7.1f} ms   p99 {pct(totals, 99):7.1f} ms"
        )
    for failure in failures[:3]:
        print(f"  failure: {failure!r}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
