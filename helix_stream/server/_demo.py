"""The demo: ``helix-stream serve`` (or ``python -m helix_stream``).

This module owns the demo agent (three small tools), the demo app (the chat routes plus a
single-page chat UI at ``/`` from ``helix_stream/static/``) and :func:`serve_demo`, which runs it
with uvicorn. The page speaks the AI SDK UI message stream itself (no build step, no CDN): it
resumes a running answer after a reload, stops one through the stop route, and has a panel
that steers the session through ``POST /context``.

It runs offline with the embedded ``helix/demo-slow`` model; ``--model`` takes any litellm
model string (the provider's key comes from the environment, as litellm reads it).

``--workers N`` runs N uvicorn worker processes on one port. Each builds its own app with
:func:`app_from_env` (uvicorn needs an import string for workers; the settings travel in the
environment) and opens the store itself: a SQLite file (WAL) or PostgreSQL serves them all;
a session still runs in one process at a time, because the store admits one running turn per
session (a second POST steers the running turn: docs/guides/serving.md, "Steering").
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import sys
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any, Literal

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..agent import Agent
from ..models import load_litellm
from ..models._pool import POOL_ENV, set_max_connections
from ..session import Executor
from ..store import open_store
from ..tools import Tool, tool
from ._routes import http_error_handler, routes

__all__ = ["app_from_env", "demo_agent", "demo_app", "demo_tools", "serve_demo"]

# How serve_demo hands its settings to worker processes (see app_from_env).
MODEL_ENV = "HELIX_DEMO_MODEL"
STORE_ENV = "HELIX_DEMO_STORE"
DEFAULT_MODEL = "helix/demo-slow"
DEFAULT_STORE = "helix-demo.db"
_SHUTDOWN_GRACE = 3  # seconds running answers get at Ctrl+C

SYSTEM = (
    "You are the helix-stream demo assistant. Use the tools when they help, and follow the "
    "instructions the app gives you in context rows."
)

Currency = Literal["USD", "EUR", "GBP", "JPY", "CHF"]
_PER_EURO = {"EUR": 1.0, "USD": 1.08, "GBP": 0.85, "JPY": 162.0, "CHF": 0.95}
_UTC_OFFSETS = {"paris": 1, "berlin": 1, "london": 0, "lisbon": 0, "new york": -5, "tokyo": 9,
                "sydney": 10, "san francisco": -8, "oslo": 1, "delhi": 5.5}  # fmt: skip
_SKIES = ("sunny", "partly cloudy", "cloudy", "light rain", "windy")


def demo_tools() -> list[Tool]:
    """The demo agent's tools: made-up weather, fixed exchange rates, local time."""

    @tool
    def get_weather(city: str) -> dict[str, Any]:
        """The current weather in a city (made up, but the same city always gets the same)."""
        seed = int(hashlib.sha256(city.strip().lower().encode()).hexdigest(), 16)
        return {"city": city, "forecast": _SKIES[seed % len(_SKIES)], "temp_c": 8 + seed % 20}

    @tool
    def convert_currency(amount: float, currency: Currency) -> dict[str, Any]:
        """Convert an amount of euros to another currency (fixed demo rates)."""
        return {
            "euros": amount,
            "currency": currency,
            "amount": round(amount * _PER_EURO[currency], 2),
        }

    @tool
    def get_time(city: str) -> dict[str, Any]:
        """The local time in a city (standard time; UTC for cities the demo does not know)."""
        offset = _UTC_OFFSETS.get(city.strip().lower(), 0)
        now = dt.datetime.now(dt.UTC) + dt.timedelta(hours=offset)
        return {"city": city, "time": now.strftime("%H:%M"), "utc_offset": offset}

    return [get_weather, convert_currency, get_time]


def demo_agent(model: str = "helix/demo-slow") -> Agent:
    """The demo agent on ``model`` (any litellm model string; default: the embedded one)."""
    return Agent(name="helix-demo", system=SYSTEM, model=model, tools=demo_tools())


def _static(name: str) -> str:
    return resources.files("helix_stream").joinpath("static", name).read_text(encoding="utf-8")


def _error_code(exc: BaseException) -> str:
    """The demo page's ``errorText`` for a failed turn: the error's code (``model_rate_limited``,
    ...; never its text), which the page puts in words, as it does the stored failure's code
    (``metadata.error``) after a reload."""
    return str(getattr(exc, "code", "internal_error"))


def demo_app(
    executor: Executor, agent: Agent, *, client_version: int = 7, **options: Any
) -> Starlette:
    """The demo app: the chat routes, the page at ``/`` and ``GET /api/demo`` (agent info).

    Args:
        executor: Holds the sessions.
        agent: The agent to chat with.
        client_version: The UI stream version the page reads (it handles all of v7).
        **options: Passed to :func:`helix_stream.server.routes`. ``on_error`` defaults to the
            error's code (the page words it, live and after a reload alike).

    Returns:
        A Starlette app without authentication: for a local demo only.
    """

    async def index(request: Request) -> Response:
        return HTMLResponse(_static("index.html"), headers={"cache-control": "no-cache"})

    async def info(request: Request) -> Response:
        model = agent.model if isinstance(agent.model, str) else type(agent.model).__name__
        return JSONResponse({"agent": agent.name, "model": model, "tools": list(agent.tool_map)})

    mounted: list[BaseRoute] = [
        Route("/", index, methods=["GET"]),
        Route("/api/demo", info, methods=["GET"]),
        *routes(
            executor,
            agent,
            client_version=client_version,
            **{"on_error": _error_code, **options},
        ),
        Mount("/static", StaticFiles(packages=[("helix_stream", "static")]), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        load_litellm()  # at startup, not while the first visitor waits for an answer
        yield
        await executor.store.close()

    return Starlette(
        routes=mounted,
        lifespan=lifespan,
        exception_handlers={HTTPException: http_error_handler},
    )


def app_from_env() -> Starlette:
    """The demo app built from ``HELIX_DEMO_MODEL`` and ``HELIX_DEMO_STORE`` (the defaults
    when unset): the factory each ``--workers`` process runs
    (``uvicorn --factory helix_stream.server._demo:app_from_env``)."""
    store = os.environ.get(STORE_ENV, DEFAULT_STORE)
    executor = Executor(store=open_store(store))
    return demo_app(executor, demo_agent(os.environ.get(MODEL_ENV, DEFAULT_MODEL)))


def serve_demo(
    host: str = "127.0.0.1",
    port: int = 8000,
    model: str = DEFAULT_MODEL,
    store: str = DEFAULT_STORE,
    workers: int = 1,
    max_connections: int | None = None,
) -> int:
    """Run the demo with uvicorn until interrupted; print its URL first.

    Args:
        host: The interface to listen on (keep 127.0.0.1: the demo has no authentication).
        port: The port.
        model: A litellm model string; the embedded ``helix/demo-slow`` needs no key.
        store: Where sessions live: a SQLite file, ``:memory:``, or a ``postgres://`` URL.
        workers: uvicorn worker processes. Above 1 the store must be shared by processes: a
            SQLite file or PostgreSQL, not ``:memory:``.
        max_connections: Connections to the model provider at once, per process (default:
            :data:`~helix_stream.models._pool.DEFAULT_MAX_CONNECTIONS`).

    Returns:
        The process exit code (2 for settings that cannot work).
    """
    import uvicorn

    if workers < 1:
        print(f"--workers must be 1 or more, not {workers}", file=sys.stderr)
        return 2
    if workers > 1 and store == ":memory:":
        print(
            "--workers above 1 needs a store the processes share: a SQLite file or a "
            "postgres:// URL, not :memory: (each process would have its own sessions)",
            file=sys.stderr,
        )
        return 2
    if max_connections is not None:
        if max_connections < 1:
            print(f"--max-connections must be 1 or more, not {max_connections}", file=sys.stderr)
            return 2
        set_max_connections(max_connections)
        # The environment carries it to the worker processes (read when they load litellm).
        os.environ[POOL_ENV] = str(max_connections)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"helix-stream demo: http://{shown}:{port}/  (model {model}, store {store}"
        + (f", {workers} workers)" if workers > 1 else ")"),
        flush=True,
    )
    print("No authentication: keep it on 127.0.0.1. Ctrl+C stops it.", flush=True)
    if workers > 1:
        os.environ[MODEL_ENV], os.environ[STORE_ENV] = model, store
        uvicorn.run(
            f"{__name__}:app_from_env",
            factory=True,
            workers=workers,
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=_SHUTDOWN_GRACE,
        )
        return 0
    executor = Executor(store=open_store(store))
    uvicorn.run(
        demo_app(executor, demo_agent(model)),
        host=host,
        port=port,
        log_level="warning",
        # Ctrl+C does not wait for answers still running for a closed page (they run on after
        # a disconnect): they are cancelled, stored as interrupted.
        timeout_graceful_shutdown=_SHUTDOWN_GRACE,
    )
    return 0
