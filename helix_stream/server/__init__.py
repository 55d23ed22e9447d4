"""Serve an agent to the Vercel AI SDK's ``useChat``: a Starlette app, or routes to mount.

::

    import helix_stream as hs
    from helix_stream.server import create_app

    executor = hs.Executor(store=hs.SQLiteStore("helix.db"))
    agent = hs.Agent(name="assistant", model="openai/gpt-4o-mini", tools=[get_weather])
    app = create_app(executor, agent, authenticate=check_caller)   # uvicorn module:app

The routes (paths are options of :func:`routes`):

* ``POST /api/chat`` — the body ``useChat`` sends (``{id, messages, trigger}``; ``id`` is the
  session id). The last user message is the new input; approvals and client tool outputs come
  back inside the last assistant message and are handed to the executor. The answer is the AI
  SDK UI message stream of the turn (context rows never appear in it).
* ``POST /context`` — ``{sessionId, items, key?}`` → ``{"recorded": n}``: steer a session,
  even while it runs. A tools item naming a tool the agent does not have is recorded, and the
  answer says so: ``{"recorded": n, "warnings": ["unknown tool 'x'"]}``.
* ``GET /api/chat/{id}/messages`` — the session's UI messages (a JSON list, no context rows;
  ``[]`` for a session id with nothing stored yet).
* ``GET /api/chat/{id}/stream`` — resume: the active stream of the session so far, then live;
  204 when none is active (on PostgreSQL, in any process; otherwise in this one).
* ``POST /api/chat/{id}/stop`` — stop the session's running turn: what was streamed is stored
  as interrupted, every client of the stream gets ``abort``; answers ``{"stopped": bool}``
  once the turn has ended.
* ``GET /api/auth/callback`` — where a browser comes back from a tool's sign-in
  (``?state=&code=`` or ``&error=``): it completes the sign-in the parked call waits for and
  answers a page that sends the user back to the chat (README, "Tools that act for the user:
  authorization").

Errors are JSON, ``{"error": {"code", "message"}}``, with the error's HTTP status: 400 for a bad
body or an invalid context item, 401/403 from ``authenticate``, 404 for an unknown session, 409
for a key conflict or a busy session, 413 for a body over ``max_body_bytes``, a masked 500 for
anything unexpected (logged on ``helix_stream.server``).

Warning:
    **These routes do not check who is calling unless you pass ``authenticate``.** Without it,
    anyone who can reach the app can read every session, run the agent on your model account
    and steer any session with ``POST /context`` (an ``instruction`` takes a system form: it
    has operator authority). Pass ``authenticate(request)`` — it may raise
    :class:`~helix_stream.errors.AuthenticationError` (401) or
    :class:`~helix_stream.errors.PermissionDeniedError` (403) and its return value is the run's
    ``auth`` — or check the caller in front of the app. Authorize per session too, with
    ``authorize(auth, session_id)``: a caller should only reach the sessions that are theirs.

A chat client that goes away does not end its turn (``on_disconnect="continue"``, the
default): the turn runs to its end, bounded by the run's limits and ``detached_timeout``, and a
client that comes back (a reload with ``useChat``'s ``resume: true``) follows it from
``GET .../stream``. The stop route ends it on purpose. ``on_disconnect="cancel"`` cancels the
turn as soon as its client has gone.

litellm takes seconds to import, and an import blocks the event loop: :func:`create_app`
imports it at startup (:func:`lifespan`). At shutdown (a deploy's SIGTERM) the app's lifespan
ends every turn running in the process as interrupted — what was streamed stored, the session
idle, its lease released — within ``shutdown_grace`` seconds (:data:`SHUTDOWN_GRACE`).
Mounting :func:`routes` in your own app, give them a ``turns=RunningTurns()`` and use
``functools.partial(lifespan, turns=turns)`` as your app's lifespan
(``FastAPI(lifespan=...)``), or call :func:`~helix_stream.models.load_litellm` at startup and
``await turns.stop_all()`` at shutdown in your own.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from typing_extensions import Unpack

from ..agent import Agent
from ..models import load_litellm
from ..session import Executor
from ._fastapi import fastapi_router
from ._options import (
    DETACHED_TIMEOUT,
    Authenticate,
    Authorize,
    RunOptions,
    ServerKeywords,
    ServerOptions,
    documents_server_options,
    server_options,
)
from ._routes import SERVER_TIMEOUT, error_response, http_error_handler, routes
from ._shared_streams import SharedStreamRegistry
from ._shutdown import SHUTDOWN_GRACE, lifespan
from ._streams import ActiveStream, StreamRegistry
from ._turns import RunningTurns, StopElsewhere

__all__ = [
    "DETACHED_TIMEOUT",
    "SERVER_TIMEOUT",
    "SHUTDOWN_GRACE",
    "ActiveStream",
    "Authenticate",
    "Authorize",
    "RunOptions",
    "RunningTurns",
    "ServerKeywords",
    "ServerOptions",
    "SharedStreamRegistry",
    "StopElsewhere",
    "StreamRegistry",
    "cors_options",
    "create_app",
    "error_response",
    "fastapi_router",
    "http_error_handler",
    "lifespan",
    "load_litellm",
    "routes",
]


def cors_options(origins: Sequence[str]) -> dict[str, Any]:
    """Starlette ``CORSMiddleware`` settings for a chat front end served from ``origins``.

    What ``useChat`` needs from another origin: ``GET`` and ``POST`` with any request header
    (``content-type``, ``authorization``), and the UI message stream's header exposed.
    Credentials (cookies) are allowed for listed origins, never with ``"*"``.

    Example::

        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, **cors_options(["http://localhost:5173"]))
    """
    if isinstance(origins, str):
        raise TypeError(f"cors_origins takes a list of origins, not the string {origins!r}")
    listed = list(origins)
    return {
        "allow_origins": listed,
        "allow_methods": ["GET", "POST"],
        "allow_headers": ["*"],
        "allow_credentials": "*" not in listed,
        "expose_headers": ["x-vercel-ai-ui-message-stream"],
    }


@documents_server_options
def create_app(
    executor: Executor,
    agent: Agent[Any],
    authenticate: Authenticate | None = None,
    *,
    cors_origins: Sequence[str] = (),
    shutdown_grace: float = SHUTDOWN_GRACE,
    options: ServerOptions | None = None,
    **keywords: Unpack[ServerKeywords],
) -> Starlette:
    """A Starlette app serving ``agent`` through ``executor`` (see the module docstring).

    Warning:
        Without ``authenticate`` the app is open to anyone who can reach it.

    Example::

        app = create_app(executor, agent, check_caller, client_version=6)

    Args:
        executor: Runs the turns and holds the sessions.
        agent: The agent every chat turn runs.
        authenticate: ``authenticate(request)``, sync or async: raise
            ``AuthenticationError``/``PermissionDeniedError`` to refuse; the return value is
            passed to ``executor.run(..., auth=...)``.
        cors_origins: Origins of front ends on another origin (``"http://localhost:5173"``,
            or ``"*"``): the app answers their CORS preflights (see :func:`cors_options`).
        shutdown_grace: Seconds the shutdown waits for the running turns to end.
        options: The server options as one value (:class:`ServerOptions`); keywords win.
        {server options}

    Returns:
        The app (serve it with ``uvicorn``). Its startup imports litellm; its shutdown
        closes the executor (``executor.close()``: the agents' MCP servers).

    Raises:
        TypeError: a keyword that is not a server option (naming the closest one).
    """
    opts = server_options(options, keywords)
    turns = opts.turns or RunningTurns()
    mounted = routes(executor, agent, authenticate, options=replace(opts, turns=turns))
    middleware = [Middleware(CORSMiddleware, **cors_options(cors_origins))] if cors_origins else []

    return Starlette(
        routes=mounted,
        middleware=middleware,
        lifespan=functools.partial(lifespan, turns=turns, grace=shutdown_grace, executor=executor),
        exception_handlers={HTTPException: http_error_handler},
    )
