"""Serve an agent to the Vercel AI SDK's ``useChat``: a Starlette app, or routes to mount.

::

    import helix_stream as hs
    from helix_stream.server import create_app

    executor = hs.Executor(store=hs.SQLiteStore("helix.db"))
    agent = hs.Agent(name="assistant", model="openai/gpt-4o-mini", tools=[...])
    app = create_app(executor, agent, authenticate=check_caller)   # uvicorn module:app

The routes (paths are options of :func:`routes`):

* ``POST /api/chat`` — the body ``useChat`` sends (``{id, messages, trigger}``; ``id`` is the
  session id). The last user message is the new input; approvals and client tool outputs come
  back inside the last assistant message and are handed to the executor. The answer is the AI
  SDK UI message stream of the turn (context rows never appear in it).
* ``POST /context`` — ``{sessionId, items, key?}`` → ``{"recorded": n}``: steer a session,
  even while it runs.
* ``GET /api/chat/{id}/messages`` — the session's UI messages (a JSON list, no context rows).
* ``GET /api/chat/{id}/stream`` — resume: the active stream of the session so far, then live;
  204 when none is active (on PostgreSQL, in any process; otherwise in this one).

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

A client disconnect cancels the turn: the model stream is closed, running tools are cancelled
and the session is left idle.

litellm takes seconds to import, and an import blocks the event loop: :func:`create_app`
imports it at startup (its lifespan). Mounting :func:`routes` in your own app, call
:func:`~helix_stream.models.load_litellm` once at startup yourself.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException

from ..agent import Agent
from ..models import load_litellm
from ..session import Executor
from ._routes import Authenticate, Authorize, RunOptions, error_response, http_error_handler, routes
from ._shared_streams import SharedStreamRegistry
from ._streams import ActiveStream, StreamRegistry

__all__ = [
    "ActiveStream",
    "Authenticate",
    "Authorize",
    "RunOptions",
    "SharedStreamRegistry",
    "StreamRegistry",
    "create_app",
    "error_response",
    "http_error_handler",
    "load_litellm",
    "routes",
]


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    # At startup, before the first request: importing litellm during a request would block
    # every connection of the process for seconds.
    load_litellm()
    yield


def create_app(
    executor: Executor,
    agent: Agent,
    authenticate: Authenticate | None = None,
    client_version: int = 7,
    max_body_bytes: int = 1_000_000,
    **options: Any,
) -> Starlette:
    """A Starlette app serving ``agent`` through ``executor`` (see the module docstring).

    Warning:
        Without ``authenticate`` the app is open to anyone who can reach it.

    Args:
        executor: Runs the turns and holds the sessions.
        agent: The agent every chat turn runs.
        authenticate: ``authenticate(request)``, sync or async: raise
            ``AuthenticationError``/``PermissionDeniedError`` to refuse; the return value is
            passed to ``executor.run(..., auth=...)``.
        client_version: Major version of the ``ai`` npm package the clients run (5, 6, 7).
        max_body_bytes: Larger request bodies are refused with 413.
        **options: Passed to :func:`routes` (``authorize``, ``api_path``, ``context_path``,
            ``run_options``, ``on_error``, ``generate_message_id``, ``streams``).

    Returns:
        The app (serve it with ``uvicorn``). Its startup imports litellm.
    """
    mounted = routes(
        executor,
        agent,
        authenticate,
        client_version=client_version,
        max_body_bytes=max_body_bytes,
        **options,
    )
    return Starlette(
        routes=mounted,
        lifespan=_lifespan,
        exception_handlers={HTTPException: http_error_handler},
    )
