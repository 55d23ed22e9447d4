"""Serving at scale: raw litellm, helix and pydantic-ai side by side, each behind uvicorn.

Run: ``.venv/bin/python bench/bench_serving.py`` (``make bench`` runs it with ``--quick``;
``--help`` lists the knobs). Needs the ``bench`` extra (``pip install -e '.[bench]'``) for
pydantic-ai; PostgreSQL rows need the ``postgres`` extra and a server (``--postgres DSN``).

One loopback model (``_model_server.py``, its own process; it speaks the OpenAI, Anthropic,
Gemini and Bedrock Converse wire formats) streams every answer. Each framework
(``_serving_apps.py``) runs in its own uvicorn process:

* **(a) 200 chats at once**: the model streams 40 words 20 ms apart. Per server: p50/p99 time to
  the first ``text-delta``, p99 time to the end, and a check that every chat got its full text.
* **(b) CPU per chunk**, on each provider family's wire format (``--families``, default all
  four): one 2,000-word answer through Starlette over ``httpx.ASGITransport``, in a fresh
  process per repeat; the serving process's CPU time (``time.process_time``, all threads)
  divided by the words, median of ``--cpu-runs`` interleaved runs, with ratios. helix's
  ``stream_text`` has a row per read path: the direct reader (helix reads the provider's HTTP
  body) and litellm's own stream wrapper, which a call takes while a litellm callback is
  registered (one is registered around each of that row's requests, and removed after).
  ``--read-paths`` measures only raw litellm and those two rows (no ``bench`` extra). pydantic-ai
  uses its own model per family: ``OpenAIChatModel`` (the ``openai`` SDK), ``AnthropicModel``
  (``anthropic``), ``GoogleModel`` (``google-genai``) and ``BedrockConverseModel`` (boto3, on
  Bedrock Converse's binary event stream).
* **(c) memory**: the helix server's RSS growth per idle stored session (chats run one after
  another) and every server's RSS growth per active stream (peak during (a)).
* **(d) several processes**: ``helix-stream serve --workers N`` (1 and 2) on one SQLite file
  (WAL) and on PostgreSQL: chats per second, and concurrent POSTs to one session from
  connections that different workers accepted: exactly one turn runs (the model server counts
  the calls), the others are refused.
* **(g) 1,000 chats at once** on one helix process (SQLiteStore), the model streaming
  ``--words`` words ``--delay-ms`` apart: p50/p99 time to the first ``text-delta``, p99 to the
  end, and every chat complete; once with helix's default connection pool
  (``routes(max_connections=...)``, 4,096) and once capped at litellm's own default of 500 per
  host (``AIOHTTP_CONNECTOR_LIMIT_PER_HOST=500``), where the second 500 chats queue behind
  the first. ``--quick`` runs the default pool only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _model_server import expected_text  # noqa: E402
from _sse_client import ChatResult, chat_body, connect, post_chat  # noqa: E402

KINDS = ("raw", "helix", "pydantic-ai")
LABELS = {
    "raw": "raw Starlette + litellm.acompletion + hand-written UI chunks",
    "helix": "helix create_app (SQLiteStore)",
    "pydantic-ai": "pydantic-ai VercelAIAdapter (the provider's SDK)",
    "helix-stream-text": "helix stream_text(...).to_sse_response(), direct reader",
    "helix-litellm-path": "helix stream_text(...).to_sse_response(), litellm's wrapper",
    "helix-app": "helix create_app (SQLiteStore), whole turn",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONUNBUFFERED": "1",
    }


@contextmanager
def process(
    args: list[str], extra_env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(args, env={**env(), **(extra_env or {})}, stdout=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


async def wait_ready(port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await connect(port)
            writer.close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def check(result: ChatResult, words: int) -> str | None:
    """Why a chat is incomplete, or ``None``."""
    if result.status != 200:
        return f"status {result.status}: {result.body[:200]!r}"
    if not result.done:
        return f"no [DONE] (types {result.types[-3:]})"
    if result.text != expected_text(words):
        return f"text of {len(result.text)} chars, expected {len(expected_text(words))}"
    return None


# -- (a) + (c): a burst of chats at once ----------------------------------------------------


async def burst(port: int, pid: int, prefix: str, chats: int, words: int) -> dict[str, Any]:
    """Open ``chats`` chats at once; times, failures and the server's peak RSS."""
    before = rss(pid)
    peak = before
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss(pid))
            await asyncio.sleep(0.02)

    sampler = asyncio.ensure_future(sample())
    start = time.perf_counter()
    results = await asyncio.gather(
        *[post_chat(port, chat_body(f"{prefix}-{i}", "Say the words.")) for i in range(chats)],
        return_exceptions=True,
    )
    wall = time.perf_counter() - start
    done.set()
    await sampler
    failures = [repr(r) if isinstance(r, BaseException) else check(r, words) for r in results]
    ok = [r for r, f in zip(results, failures, strict=True) if f is None]
    return {
        "complete": len(ok),
        "failures": [f for f in failures if f is not None],
        "first": [r.first_text for r in ok],  # type: ignore[union-attr]
        "end": [r.end for r in ok],  # type: ignore[union-attr]
        "wall": wall,
        "rss_per_stream": (peak - before) / chats,
    }


async def idle_sessions(port: int, pid: int, sessions: int, words: int) -> float:
    """RSS growth per stored session, chats run 10 at a time (no burst of live streams)."""
    for i in range(3):  # warm-up
        await post_chat(port, chat_body(f"idle-warm-{i}", "Say the words."))
    before = rss(pid)
    for start in range(0, sessions, 10):
        batch = range(start, min(start + 10, sessions))
        results = await asyncio.gather(
            *[post_chat(port, chat_body(f"idle-{i}", "Say the words.")) for i in batch]
        )
        for r in results:
            assert check(r, words) is None, check(r, words)
    await asyncio.sleep(0.5)
    return (rss(pid) - before) / sessions


# -- (b): CPU per chunk, in a child process ---------------------------------------------------


CPU_KINDS = ("raw", "helix-stream-text", "helix-litellm-path", "pydantic-ai", "helix-app")
READ_PATH_KINDS = ("raw", "helix-stream-text", "helix-litellm-path")


@contextmanager
def litellm_callback(kind: str) -> Iterator[None]:
    """For the ``helix-litellm-path`` row: a litellm callback registered during the request, so
    that helix leaves the stream to litellm's wrapper (the read path is chosen per call: the
    other rows' calls, after it is removed, are read directly again)."""
    if kind != "helix-litellm-path":
        yield
        return
    import litellm
    from litellm.integrations.custom_logger import CustomLogger

    handler = CustomLogger()
    litellm.callbacks.append(handler)
    try:
        yield
    finally:
        litellm.logging_callback_manager.remove_callback_from_all_lists(handler)


async def cpu_child(
    base: str, words: int, runs: int, delay_ms: int, family: str = "openai",
    names: tuple[str, ...] = CPU_KINDS,
) -> dict[str, list[float]]:  # fmt: skip
    """µs of this process's CPU per chunk for each server, ``runs`` interleaved runs each."""
    import httpx
    from _serving_apps import make_app

    model = f"words-{words}-{delay_ms}"
    tmp = tempfile.mkdtemp()
    makers = {
        "raw": lambda: make_app("raw", base, model, family=family),
        "helix-stream-text": lambda: make_app("helix-stream-text", base, model, family=family),
        "helix-litellm-path": lambda: make_app("helix-stream-text", base, model, family=family),
        "pydantic-ai": lambda: make_app("pydantic-ai", base, model, family=family),
        "helix-app": lambda: make_app("helix", base, model, str(Path(tmp) / "cpu.db"), family),
    }
    kinds = {kind: makers[kind]() for kind in names}
    clients = {}
    lifespans = contextlib.AsyncExitStack()
    for kind, app in kinds.items():
        await lifespans.enter_async_context(app.router.lifespan_context(app))
        clients[kind] = httpx.AsyncClient(
            transport=httpx.ASGITransport(app), base_url="http://bench", timeout=600
        )
    out: dict[str, list[float]] = {kind: [] for kind in kinds}
    for run in range(runs + 1):  # run 0 warms up
        for kind, client in clients.items():
            body = chat_body(f"cpu-{run}-{uuid.uuid4().hex[:6]}", "Say the words.")
            with litellm_callback(kind):
                start = time.process_time()
                response = await client.post(
                    "/api/chat", content=body, headers={"content-type": "application/json"}
                )
                spent = time.process_time() - start
            chunks = [
                json.loads(line[6:])
                for line in response.text.split("\n")
                if line.startswith("data: {")
            ]
            text = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
            assert text == expected_text(words), (kind, len(text), response.text[-300:])
            if run:
                out[kind].append(spent / words * 1e6)
    for client in clients.values():
        await client.aclose()
    await lifespans.aclose()
    return out


# -- (d): several worker processes ------------------------------------------------------------


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def accepting_pids(server_pid: int, server_port: int, client_ports: list[int]) -> dict[int, int]:
    """Which worker process holds the server side of each client connection (client port ->
    pid), read from /proc/net/tcp and each worker's file descriptors."""
    inodes: dict[str, int] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if int(local.split(":")[1], 16) == server_port:
            inodes[inode] = int(remote.split(":")[1], 16)
    owners: dict[int, int] = {}
    for pid in [server_pid, *descendants(server_pid)]:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    port = inodes.get(target[8:-1])
                    if port in client_ports:
                        owners[port] = pid
        except OSError:
            continue
    return owners


def _is_worker(pid: int) -> bool:
    """A uvicorn worker: a process multiprocessing spawned (not its resource tracker)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False
    return "spawn_main" in cmdline and "resource_tracker" not in cmdline


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def _spread(connections: list[Connection], owners: dict[int, int], count: int) -> list[Connection]:
    """``count`` connections, taken round-robin over the workers that accepted them."""
    by_owner: dict[int, list[Connection]] = {}
    for connection in connections:
        owner = owners.get(connection[1].get_extra_info("sockname")[1], 0)
        by_owner.setdefault(owner, []).append(connection)
    chosen: list[Connection] = []
    while len(chosen) < count and any(by_owner.values()):
        for group in by_owner.values():
            if group and len(chosen) < count:
                chosen.append(group.pop(0))
    return chosen


async def throughput(
    port: int, chats: int, concurrency: int, words: int, prefix: str
) -> tuple[float, int]:
    """Chats per second with ``concurrency`` chats open at a time; and how many completed."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> bool:
        async with gate:
            result = await post_chat(port, chat_body(f"{prefix}-{i}", "Say the words."))
            return check(result, words) is None

    start = time.perf_counter()
    ok = await asyncio.gather(*[one(i) for i in range(chats)])
    return chats / (time.perf_counter() - start), sum(ok)


async def model_calls(model_port: int, text: str) -> int:
    result = await asyncio.wait_for(_get_stats(model_port), 10)
    return int(result["by_text"].get(text, 0))


async def _get_stats(model_port: int) -> dict[str, Any]:
    reader, writer = await connect(model_port)
    writer.write(b"GET /stats HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    body = await reader.readexactly(length)
    writer.close()
    return json.loads(body)  # type: ignore[no-any-return]


async def one_session_race(
    port: int, server_pid: int, model_port: int, posts: int, words: int
) -> dict[str, Any]:
    """``posts`` POSTs to one new session, sent at the same instant on open connections."""
    session = f"race-{uuid.uuid4().hex[:8]}"
    text = f"Race {session}."
    # Open connections one by one until every worker holds some (the kernel hands a burst of
    # connections to whichever worker accepts first), then use `posts` of them.
    connections: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    owners: dict[int, int] = {}
    workers = len([p for p in descendants(server_pid) if _is_worker(p)]) or 1
    for _ in range(20 * posts):
        connections.append(await connect(port))
        await asyncio.sleep(0.02)  # let a worker accept it
        ports = [w.get_extra_info("sockname")[1] for _, w in connections]
        owners = accepting_pids(server_pid, port, ports)
        if len(connections) >= posts and len(set(owners.values())) >= min(workers, 2):
            break
    chosen = _spread(connections, owners, posts)
    for extra in connections:
        if extra not in chosen:
            extra[1].close()
    connections = chosen
    body = chat_body(session, text)
    results = await asyncio.gather(
        *[post_chat(port, body, connection=c, keep_open=True) for c in connections]
    )
    used = {owners.get(w.get_extra_info("sockname")[1]) for _, w in connections} - {None}
    for _, writer in connections:
        writer.close()
    ran = [r for r in results if check(r, words) is None]
    refused = [r for r in results if r.status == 409]
    errored = [r for r in results if r.status == 200 and "error" in r.types]
    return {
        "workers": len(used),
        "ran": len(ran),
        "409": len(refused),
        "200+error": len(errored),
        "other": posts - len(ran) - len(refused) - len(errored),
        "model_calls": await model_calls(model_port, text),
    }


# -- orchestration ----------------------------------------------------------------------------


def server_args(kind: str, port: int, base: str, model: str, store: str = "") -> list[str]:
    return [sys.executable, str(HERE / "_serving_apps.py"), kind, str(port), base, model, store]


async def part_a(args: argparse.Namespace, base: str, tmp: Path) -> None:
    model = f"words-{args.words}-{args.delay_ms}"
    ports = {kind: free_port() for kind in KINDS}
    with (
        process(server_args("raw", ports["raw"], base, model)) as raw,
        process(server_args("helix", ports["helix"], base, model, str(tmp / "a.db"))) as helix,
        process(server_args("pydantic-ai", ports["pydantic-ai"], base, model)) as pyd,
    ):
        pids = {"raw": raw.pid, "helix": helix.pid, "pydantic-ai": pyd.pid}
        for kind in KINDS:
            await wait_ready(ports[kind])
            for i in range(3):
                warm = await post_chat(ports[kind], chat_body(f"warm-{kind}-{i}", "Say the words."))
                assert check(warm, args.words) is None, (kind, check(warm, args.words))
        runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
        for round_ in range(args.rounds):
            order = KINDS[round_ % 3 :] + KINDS[: round_ % 3]  # rotate who goes first
            for kind in order:
                runs[kind].append(
                    await burst(ports[kind], pids[kind], f"r{round_}", args.chats, args.words)
                )
                await asyncio.sleep(1)
    print(
        f"\n(a) {args.chats} chats opened at once; the model streams {args.words} words "
        f"{args.delay_ms} ms apart; {args.rounds} round(s), ranges over rounds\n"
    )
    print(
        "| server | complete | first text p50 | first text p99 | end p99 | RSS per active stream |"
    )
    print("|---|---|---|---|---|---|")
    for kind in KINDS:
        rs = runs[kind]

        def span(fn: Any, rs: list[dict[str, Any]] = rs) -> str:
            values = [fn(r) for r in rs]
            lo, hi = min(values), max(values)
            return f"{lo:.2f} s" if len(values) == 1 else f"{lo:.2f}–{hi:.2f} s"

        complete = " / ".join(f"{r['complete']}/{args.chats}" for r in rs)
        print(
            f"| {LABELS[kind]} | {complete} | {span(lambda r: pct(r['first'], 50))} "
            f"| {span(lambda r: pct(r['first'], 99))} | {span(lambda r: pct(r['end'], 99))} "
            f"| {rs[0]['rss_per_stream'] / 1024:.0f} KiB |"
        )
        for r in rs:
            for failure in r["failures"][:3]:
                print(f"    {kind} failure: {failure}")
    helix_p99 = [pct(r["first"], 99) for r in runs["helix"]]
    pyd_p99 = [pct(r["first"], 99) for r in runs["pydantic-ai"]]
    ratios = [h / p for h, p in zip(helix_p99, pyd_p99, strict=True)]
    print(
        f"\nfirst text p99, helix / pydantic-ai per round: {', '.join(f'{r:.2f}' for r in ratios)}"
    )


async def part_c(args: argparse.Namespace, base: str, tmp: Path) -> None:
    model = f"words-{args.words}-0"
    print(
        f"\n(c) memory: RSS growth per idle stored session ({args.sessions} chats, 10 at a time)\n"
    )
    print("| store | RSS per idle session |")
    print("|---|---|")
    for label, store in (("SQLiteStore", str(tmp / "c.db")), ("MemoryStore", ":memory:")):
        port = free_port()
        with process(server_args("helix", port, base, model, store)) as proc:
            await wait_ready(port)
            per = await idle_sessions(port, proc.pid, args.sessions, args.words)
        print(f"| {label} | {per / 1024:.1f} KiB |")


def part_b(args: argparse.Namespace, base: str, family: str = "openai") -> None:
    print(
        f"\n(b) CPU per chunk, {family} wire format: one {args.cpu_words}-word answer "
        f"({args.cpu_delay_ms} ms apart) over httpx.ASGITransport; median of {args.cpu_runs} "
        f"runs, {args.cpu_repeats} process(es)\n"
    )
    names = READ_PATH_KINDS if args.read_paths else CPU_KINDS
    medians: dict[str, list[float]] = {}
    paired: dict[str, list[float]] = {}  # per process: median of per-run ratios to raw
    paired_pyd: dict[str, list[float]] = {}
    for _ in range(args.cpu_repeats):
        out = subprocess.run(
            [sys.executable, __file__, "--cpu-child", base, str(args.cpu_words),
             str(args.cpu_runs), str(args.cpu_delay_ms), family, ",".join(names)],
            env=env(), check=True, capture_output=True, text=True,
        )  # fmt: skip
        result = json.loads(out.stdout.strip().splitlines()[-1])
        for kind, values in result.items():
            medians.setdefault(kind, []).append(statistics.median(values))
            paired.setdefault(kind, []).append(
                statistics.median(v / r for v, r in zip(values, result["raw"], strict=True))
            )
            if "pydantic-ai" in result:
                paired_pyd.setdefault(kind, []).append(
                    statistics.median(
                        v / p for v, p in zip(values, result["pydantic-ai"], strict=True)
                    )
                )
    to_pyd = "| ratio to pydantic-ai " if paired_pyd else ""
    print(f"| server | µs per chunk | ratio to raw {to_pyd}|")
    print("|---|---|---|" + ("---|" if paired_pyd else ""))
    for kind in names:
        pyd = f"| {_range(paired_pyd[kind], '.2f')}× " if paired_pyd else ""
        print(
            f"| {LABELS[kind]} | {_range(medians[kind], '.0f')} "
            f"| {_range(paired[kind], '.2f')}× {pyd}|"
        )
    print(
        "\nµs per chunk: the median run of each process, range over processes; ratios: the "
        "median of per-run ratios (runs are interleaved), range over processes."
    )


def _range(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return format(lo, fmt) if format(lo, fmt) == format(hi, fmt) else f"{lo:{fmt}}–{hi:{fmt}}"


@contextmanager
def postgres_database(dsn: str) -> Iterator[str]:
    """A database of its own on the server ``dsn`` names (dropped afterwards); its URL."""
    import psycopg

    name = f"helix_bench_{os.getpid()}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield dsn.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def serve_and_measure(
    args: argparse.Namespace, base: str, model_port: int, store: str, workers: int
) -> dict[str, Any]:
    port = free_port()
    model = f"openai/words-{args.words}-{args.delay_ms}"
    cli = [sys.executable, "-m", "helix_stream", "serve", "--port", str(port), "--model", model,
           "--store", store, "--workers", str(workers)]  # fmt: skip
    extra = {"OPENAI_API_BASE": base, "OPENAI_API_KEY": "sk-bench"}
    with process(cli, extra) as proc:
        await wait_ready(port)
        for i in range(4 * workers):  # warm every worker up (litellm's first call)
            for _ in range(600):
                try:
                    warm = await post_chat(
                        port, chat_body(f"w{workers}-warm-{i}", "Say the words.")
                    )
                    break
                except (OSError, asyncio.IncompleteReadError):
                    await asyncio.sleep(0.1)
            assert check(warm, args.words) is None, check(warm, args.words)
        rate, ok = await throughput(
            port, args.throughput_chats, args.concurrency, args.words, f"tp-{workers}"
        )
        races = [
            await one_session_race(port, proc.pid, model_port, args.race_posts, args.words)
            for _ in range(args.races)
        ]
    return {"rate": rate, "ok": ok, "races": races}


async def part_d(args: argparse.Namespace, base: str, model_port: int, tmp: Path) -> None:
    stores: list[tuple[str, Any]] = [("SQLite (WAL, one file)", None)]
    if args.postgres:
        stores.append(("PostgreSQL", args.postgres))
    rows = []
    for label, dsn in stores:
        for workers in (1, 2):
            if dsn is None:
                result = await serve_and_measure(
                    args, base, model_port, str(tmp / f"d{workers}.db"), workers
                )
            else:
                with postgres_database(dsn) as url:
                    result = await serve_and_measure(args, base, model_port, url, workers)
            rows.append((label, workers, result))
    print(
        f"\n(d) helix-stream serve --workers N: {args.throughput_chats} chats, {args.concurrency} "
        f"open at a time ({args.words} words {args.delay_ms} ms apart); then {args.races} × "
        f"{args.race_posts} concurrent POSTs to one session\n"
    )
    print(
        "| store | workers | chats/s | complete | races: workers hit | ran | 409 | 200+error | model calls |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for label, workers, r in rows:
        races = r["races"]

        def col(key: str, races: list[dict[str, Any]] = races) -> str:
            return ",".join(str(x[key]) for x in races)

        print(
            f"| {label} | {workers} | {r['rate']:.1f} | {r['ok']}/{args.throughput_chats} "
            f"| {col('workers')} | {col('ran')} | {col('409')} | {col('200+error')} "
            f"| {col('model_calls')} |"
        )


# -- (g): a thousand chats on one process ------------------------------------------------------


async def part_g(args: argparse.Namespace, base: str, tmp: Path) -> None:
    model = f"words-{args.words}-{args.delay_ms}"
    pools = [("helix default (4,096)", None)]
    if not args.quick:
        pools.append(("litellm default (500 per host)", "500"))
    rows = []
    for label, cap in pools:
        port = free_port()
        store = str(tmp / f"g-{cap or 'default'}.db")
        extra = {"AIOHTTP_CONNECTOR_LIMIT_PER_HOST": cap} if cap else None
        with process(server_args("helix", port, base, model, store), extra) as server:
            await wait_ready(port)
            for i in range(3):
                warm = await post_chat(port, chat_body(f"warm-g-{i}", "Say the words."))
                assert check(warm, args.words) is None, check(warm, args.words)
            rows.append((label, await burst(port, server.pid, "g", args.big_chats, args.words)))
    print(
        f"\n(g) {args.big_chats} chats opened at once on one helix process (SQLiteStore); the "
        f"model streams {args.words} words {args.delay_ms} ms apart\n"
    )
    print("| connection pool | complete | first text p50 | first text p99 | end p99 | wall |")
    print("|---|---|---|---|---|---|")
    for label, r in rows:
        first, end = r["first"] or [math.nan], r["end"] or [math.nan]
        print(
            f"| {label} | {r['complete']}/{args.big_chats} | {pct(first, 50):.2f} s "
            f"| {pct(first, 99):.2f} s | {pct(end, 99):.2f} s | {r['wall']:.1f} s |"
        )
        for failure in r["failures"][:3]:
            print(f"    failure: {failure}")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="a short run: fewer chats, words and runs")
    add("--parts", default="abcdg", help="which parts to run (default abcdg)")
    add("--families", default="openai,anthropic,gemini,bedrock",
        help="wire formats of (b), comma-separated (default all four)")  # fmt: skip
    add("--big-chats", type=int, default=1000, help="chats at once in (g)")
    add("--chats", type=int, default=200)
    add("--words", type=int, default=40)
    add("--delay-ms", type=int, default=20)
    add("--rounds", type=int, default=1, help="rounds of (a)")
    add("--cpu-words", type=int, default=2000)
    add("--cpu-runs", type=int, default=5)
    add("--cpu-repeats", type=int, default=3, help="fresh processes for (b)")
    add("--cpu-delay-ms", type=int, default=1)
    add("--sessions", type=int, default=200, help="idle sessions for (c)")
    add("--throughput-chats", type=int, default=300)
    add("--concurrency", type=int, default=100)
    add("--races", type=int, default=3)
    add("--race-posts", type=int, default=8)
    add("--postgres", default=os.environ.get("HELIX_BENCH_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test"),
        help="a PostgreSQL server (its database is used to create a scratch one); '' skips")  # fmt: skip
    add("--read-paths", action="store_true",
        help="(b) for raw litellm and helix's two read paths only (no pydantic-ai needed)")  # fmt: skip
    add("--cpu-child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.chats, args.cpu_words, args.cpu_runs, args.cpu_repeats = 50, 500, 3, 1
        args.sessions, args.throughput_chats, args.concurrency, args.races = 50, 60, 30, 1
    return args


async def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.cpu_child:
        base, words, runs, delay, family, names = args.cpu_child
        out = await cpu_child(
            base, int(words), int(runs), int(delay), family, tuple(names.split(","))
        )
        print(json.dumps(out))
        return 0
    model_port = free_port()
    base = f"http://127.0.0.1:{model_port}/v1"
    with (
        tempfile.TemporaryDirectory() as tmp,
        process([sys.executable, str(HERE / "_model_server.py"), str(model_port)]),
    ):
        await wait_ready(model_port)
        if "a" in args.parts:
            await part_a(args, base, Path(tmp))
        if "b" in args.parts:
            for family in args.families.split(","):
                part_b(args, base, family)
        if "c" in args.parts:
            await part_c(args, base, Path(tmp))
        if "d" in args.parts:
            await part_d(args, base, model_port, Path(tmp))
        if "g" in args.parts:
            await part_g(args, base, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
