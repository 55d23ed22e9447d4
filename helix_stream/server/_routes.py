"""The HTTP routes: chat (SSE), context, messages, resume, stop; errors as JSON.

This module owns :func:`routes` and the handlers behind it. Each handler authenticates the
caller, reads and validates its body (:mod:`._bodies`), calls the
:class:`~helix_stream.Executor`, and answers. Every failure before a stream starts is a JSON
body ``{"error": {"code", "message"}}`` with the error's HTTP status; an exception that is not
a :class:`~helix_stream.errors.HelixError` is logged and answered with a masked 500, never a
traceback. Once a stream has started, failures travel inside it as a masked ``error`` chunk
(:mod:`helix_stream.transformers`).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from typing_extensions import Unpack

from .._limits import check_session_id
from ..agent import Agent
from ..errors import HelixError, SessionNotFoundError
from ..loop import Timeout
from ..loop._options import timeout_over
from ..models._litellm import expect_requests
from ..models._pool import set_max_connections
from ..session import Executor
from ..session._records import UserRecord, new_message_id
from ..transformers import UIMessageStreamResponse, to_ui_message_stream
from ..transformers._sse import check_on_disconnect
from ._auth_callback import auth_callback_routes
from ._bodies import ChatActions, ChatRequest, ContextRequest, chat_actions, parse_body, read_body
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
from ._shared_streams import SharedStreamRegistry
from ._streams import StreamRegistry
from ._turns import RunningTurns

__all__ = [
    "DETACHED_TIMEOUT",
    "NO_ANSWER_BOUND",
    "SERVER_TIMEOUT",
    "Authenticate",
    "Authorize",
    "RunOptions",
    "ServerOptions",
    "error_response",
    "http_error_handler",
    "routes",
]

logger = logging.getLogger("helix_stream.server")

INTERNAL_ERROR = {"error": {"code": "internal_error", "message": "An internal error occurred."}}

SERVER_TIMEOUT = Timeout(first_chunk=35.0, chunk=30.0)
"""The chat server's default limits of every turn (README, "Timeouts"). ``first_chunk``: 35 s
per attempt, so that a provider that sends no content (no first byte, headers then silence,
pings only, a trickle) ends the chat within two minutes in all — 3 attempts (the default
``max_retries=2``) x 35 s + at most 6 s of backoff = 111 s — with a ``data-retry`` part at
each retry saying the model has not answered yet (a reasoning model that thinks longer before
its first token needs the agent's ``timeout=``); ``chunk``: half a minute of silence once
output has started, far past any live stream's pause (providers that keep a connection alive
send pings, not silence), so a dead stream is noticed and the chat is not held open."""

NO_ANSWER_BOUND = 120.0
"""Seconds within which the server's defaults end a chat whose provider sends no content."""

# Keys of executor.run() that the chat route sets itself; run_options may not override them.
_RESERVED_RUN_OPTIONS = frozenset(
    {"agent", "session_id", "input", "message_id", "auth", "channel", "on_stop_requested"}
)


Handler = Callable[[Request], Awaitable[Response]]


def error_response(exc: HelixError) -> JSONResponse:
    """The JSON answer for a refused request: ``{"error": {"code", "message"}}``.

    Example::

        response = error_response(hs.SessionNotFoundError("no session 'x'"))
        assert response.status_code == 404
    """
    return JSONResponse(exc.to_dict(), status_code=exc.http_status)


async def http_error_handler(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown path, wrong method) in the same JSON shape as ours.

    Install it with ``Starlette(exception_handlers={HTTPException: http_error_handler})``
    (:func:`~helix_stream.server.create_app` does), so clients parse one error format.

    Example::

        from starlette.applications import Starlette
        from starlette.exceptions import HTTPException

        app = Starlette(routes=routes(executor, agent, check_caller),
                        exception_handlers={HTTPException: http_error_handler})
    """
    if not isinstance(exc, HTTPException):  # pragma: no cover - registered for HTTPException
        raise exc
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    body = {"error": {"code": code, "message": str(exc.detail)}}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


def _json_errors(handler: Handler) -> Handler:
    """Answer typed errors as JSON with their status; mask and log everything else."""

    @functools.wraps(handler)
    async def wrapped(request: Request) -> Response:
        try:
            return await handler(request)
        except HelixError as exc:
            return error_response(exc)
        except Exception:
            logger.exception("%s %s failed", request.method, request.url.path)
            return JSONResponse(INTERNAL_ERROR, status_code=500)

    return wrapped


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@documents_server_options
def routes(
    executor: Executor,
    agent: Agent[Any],
    authenticate: Authenticate | None = None,
    *,
    options: ServerOptions | None = None,
    **keywords: Unpack[ServerKeywords],
) -> list[BaseRoute]:
    """The chat server's routes (a list of Starlette routes), to mount in a Starlette or
    FastAPI app; :mod:`helix_stream.server` lists them.

    Warning:
        Without ``authenticate`` every route is open to anyone who can reach it: they can read
        any session and steer any agent. Check the caller (here or in front of the app).

    Example::

        app = Starlette(routes=routes(executor, agent, check_caller, client_version=6))

    Args:
        executor: Runs the turns and holds the sessions.
        agent: The agent every chat turn runs.
        authenticate: Checks the request first, on every route (:class:`Authenticate`).
        options: The server options as one value (:class:`ServerOptions`); keywords win.
        {server options}

    Returns:
        A list of Starlette routes.

    Raises:
        TypeError: a keyword that is not a server option (naming the closest one).
        ValueError: a ``client_version`` that cannot serve the agent.
    """
    opts = server_options(options, keywords)
    _check_startup(agent, opts.client_version, opts.max_connections)
    handlers = _Handlers(
        executor=executor,
        agent=agent,
        authenticate=authenticate,
        options=replace(opts, on_disconnect=check_on_disconnect(opts.on_disconnect)),
        new_message_id=opts.generate_message_id or new_message_id,
        registry=opts.streams if opts.streams is not None else default_registry(executor),
        turns=opts.turns if opts.turns is not None else RunningTurns(),
        timeout=SERVER_TIMEOUT if opts.timeout == "default" else opts.timeout,
    )
    return _route_table(handlers)


def _route_table(handlers: _Handlers) -> list[BaseRoute]:
    options = handlers.options
    base, context_path = options.api_path.rstrip("/"), options.context_path
    # {id:path}: a sub-agent's session id holds "/" ("<parent>/<call id>").
    table = [
        (base, handlers.chat, "POST", "helix_chat"),
        (context_path, handlers.add_context, "POST", "helix_context"),
        (f"{base}/{{id:path}}/messages", handlers.messages, "GET", "helix_messages"),
        (f"{base}/{{id:path}}/stream", handlers.resume, "GET", "helix_resume"),
        (f"{base}/{{id:path}}/stop", handlers.stop, "POST", "helix_stop"),
    ]
    mounted: list[BaseRoute] = [
        Route(path, _json_errors(handler), methods=[method], name=name)
        for path, handler, method, name in table
    ]
    executor, agent = handlers.executor, handlers.agent
    sign_in = auth_callback_routes(
        executor, agent, path=options.auth_callback_path, redirect_to=options.auth_redirect
    )
    return [*mounted, *sign_in]


def default_registry(executor: Executor) -> StreamRegistry | SharedStreamRegistry:
    """Where a server keeps its active streams: in the store's shared stream log when it has
    one (``Store.stream_log``: any process can resume them), else in this process."""
    if executor.store.stream_log is not None:
        return SharedStreamRegistry(executor.store)
    return StreamRegistry()


def _check_startup(agent: Agent[Any], client_version: int, max_connections: int | None) -> None:
    """Refuse, at startup, a client version that cannot serve the agent; size the pool."""
    expect_requests()  # a late litellm import is now a fault worth a warning
    if max_connections is not None:
        set_max_connections(max_connections)  # litellm need not be loaded yet
    if client_version not in (5, 6, 7):
        raise ValueError(f"client_version must be 5, 6 or 7, not {client_version!r}")
    approvals = sorted(n for n, t in agent.tool_map.items() if t.pauses_for == "approval")
    if client_version == 5 and approvals:
        raise ValueError(
            f"client_version=5 cannot serve agent {agent.name!r}: its tools {approvals} need "
            "approvals, which ai@5 clients can neither show nor answer (the calls would be "
            "lost). Use client_version=6 or 7, the major version of the 'ai' package your "
            "clients run."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Handlers:
    """The route handlers, with the options :func:`routes` was given (and what it made of
    their defaults)."""

    executor: Executor
    agent: Agent[Any]
    authenticate: Authenticate | None
    options: ServerOptions
    new_message_id: Callable[[], str]
    registry: StreamRegistry | SharedStreamRegistry
    turns: RunningTurns
    timeout: Timeout | None = None

    async def _caller(self, request: Request, session_id: str | None = None) -> Any:
        """Who is calling (``authenticate``), checked against ``session_id`` (``authorize``)."""
        auth = None if self.authenticate is None else await _maybe_await(self.authenticate(request))
        if session_id is not None:
            await self._authorized(auth, session_id)
        return auth

    async def _authorized(self, auth: Any, session_id: str) -> None:
        if self.options.authorize is not None:
            await _maybe_await(self.options.authorize(auth, session_id))

    async def _run_options(self, request: Request, auth: Any) -> dict[str, Any]:
        if self.options.run_options is None:
            return self._limits({})
        options = dict(await _maybe_await(self.options.run_options(request, auth)) or {})
        if reserved := _RESERVED_RUN_OPTIONS & options.keys():
            raise TypeError(f"run_options may not set {sorted(reserved)}")
        return self._limits(options)

    def _limits(self, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` with the turn's time limits: the request's over the agent's over the
        server's defaults, limit by limit."""
        if self.timeout is None:
            return options
        agent_over = timeout_over(self.agent.timeout, self.timeout)
        return {**options, "timeout": timeout_over(options.get("timeout"), agent_over)}

    async def chat(self, request: Request) -> Response:
        auth = await self._caller(request)
        body = parse_body(await read_body(request, self.options.max_body_bytes), ChatRequest)
        session_id = body.id
        await self._authorized(auth, session_id)
        actions = chat_actions(body)
        options = await self._run_options(request, auth)
        message_id, user_input, actions = await self._rewound(body, actions, auth, options)
        # Claims the session before the response starts: a refusal (busy, unanswered calls,
        # an unknown session to continue) is still a JSON error with its status. Registered
        # for the stop route first, so that a stop finds the turn from its claim on.
        turn = self.turns.reserve(session_id)
        try:
            result = await self.executor.start(
                self.agent,
                session_id,
                user_input,
                answers=[*actions.approvals, *actions.tool_answers],
                message_id=message_id,
                auth=auth,
                channel="http",  # what hooks see as ctx.channel.kind
                # A stop posted to another replica reaches the turn through the store.
                on_stop_requested=functools.partial(self.turns.stop_soon, session_id),
                **options,
            )
        except BaseException:
            self.turns.release(turn)
            raise
        ui = to_ui_message_stream(
            self.turns.track(turn, result),
            client_version=self.options.client_version,
            original_messages=[m.model_dump() for m in body.messages],
            on_error=self.options.on_error,
            send_sources=self.options.send_sources,
        )
        return UIMessageStreamResponse(
            self.registry.record(session_id, ui),
            on_disconnect=self.options.on_disconnect,
            detached_timeout=self.options.detached_timeout,
        )

    async def _rewound(
        self, body: ChatRequest, actions: ChatActions, auth: Any, options: dict[str, Any]
    ) -> tuple[str | None, dict[str, Any] | None, ChatActions]:
        """The turn's message id, input and actions, once the rewind the body asks is done:
        ``regenerate-message`` drops the answer it regenerates, an edit
        (``sendMessage({messageId})``: a submit whose ``messageId`` is its user message's)
        drops the stored message it replaces and all after it. Each rewind is a write, so
        the run is checked first: a refused run (a missing tool context, a bad option) is
        refused before anything is written."""
        session_id = body.id
        if body.trigger == "regenerate-message":
            # The client dropped the message it regenerates; the session drops it too, and
            # the turn answers the stored user message again, as a new message.
            regenerated = self.new_message_id()
            self._check_run(session_id, None, regenerated, auth, options)
            await self.executor.regenerate(session_id, body.messageId)
            return regenerated, None, replace(actions, approvals=[], tool_answers=[])
        message_id, user_input = self._turn_input(actions)
        if body.messageId is not None and body.messageId == actions.user_message_id:
            self._check_run(session_id, user_input, message_id, auth, options)
            await self.executor._rewind_before(session_id, body.messageId)
        return message_id, user_input, actions

    def _check_run(
        self,
        session_id: str,
        user_input: dict[str, Any] | None,
        message_id: str | None,
        auth: Any,
        options: dict[str, Any],
    ) -> None:
        """Refuse, without writing, a run ``executor.start`` would refuse before reading the
        session (``executor.run`` checks its arguments at once; the run itself is lazy and is
        dropped unstarted)."""
        self.executor.run(
            self.agent,
            session_id,
            user_input,
            message_id=message_id,
            auth=auth,
            channel="http",
            **options,
        )

    def _turn_input(self, actions: ChatActions) -> tuple[str | None, dict[str, Any] | None]:
        """The turn's assistant message id and the user's message (``None``: continue)."""
        if actions.user_content is None:
            # Continue the assistant message the client shows, under its id, so that the
            # stream's `start` and the stored messages agree.
            return actions.continued_id, None
        record = UserRecord(
            message={"role": "user", "content": actions.user_content},
            # Kept with the record: GET .../messages answers with the client's own id, and
            # the file parts as the user sent them.
            message_id=actions.user_message_id,
            parts=None if isinstance(actions.user_content, str) else actions.user_parts,
        )
        return self.new_message_id(), record.encode()

    async def add_context(self, request: Request) -> Response:
        auth = await self._caller(request)
        body = parse_body(await read_body(request, self.options.max_body_bytes), ContextRequest)
        await self._authorized(auth, body.sessionId)
        added = await self.executor.add_context_for(
            self.agent, body.sessionId, body.items, key=body.key
        )
        answer: dict[str, Any] = {"recorded": added.recorded}
        if added.warnings:  # recorded all the same (README, "Sessions and context rows")
            answer["warnings"] = list(added.warnings)
        return JSONResponse(answer)

    async def messages(self, request: Request) -> Response:
        session_id = check_session_id(request.path_params["id"])
        await self._caller(request, session_id)
        # An id the caller may use (authorize passed) with nothing stored is an empty chat.
        messages = await self.executor.ui_messages(
            session_id,
            client_version=self.options.client_version,
            on_error=self.options.on_error,
            send_sources=self.options.send_sources,
        )
        return JSONResponse(messages)

    async def resume(self, request: Request) -> Response:
        session_id = check_session_id(request.path_params["id"])
        await self._caller(request, session_id)
        stream = await self.registry.resume(session_id)
        if stream is None:
            return Response(status_code=204)
        return UIMessageStreamResponse(stream)

    async def stop(self, request: Request) -> Response:
        session_id = check_session_id(request.path_params["id"])
        await self._caller(request, session_id)
        if await self.turns.stop(session_id):
            return JSONResponse({"stopped": True})
        try:
            session = await self.executor.session(session_id)
        except SessionNotFoundError:
            session = None
        # Ended already, never started, or its process died (an expired lease: the next turn
        # takes it over): nothing runs, so nothing to stop (idempotent).
        if session is None or session.status != "running" or session.lease_expired():
            return JSONResponse({"stopped": False})
        if self.options.stop_elsewhere is not None:
            return JSONResponse({"stopped": await self.options.stop_elsewhere(session_id)})
        # The turn runs in another process: the request goes through the store, and its
        # heartbeat stops it there (Executor.request_stop).
        return JSONResponse({"stopped": await self.executor.request_stop(session_id)})
