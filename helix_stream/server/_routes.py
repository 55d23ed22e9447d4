"""The HTTP routes: chat (SSE), context, messages, resume; errors as JSON.

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
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from .._limits import check_session_id
from .._pending import approval_id_for, waiting_calls
from ..agent import Agent
from ..errors import (
    FrameworkNotSupportedError,
    HelixError,
    SessionBusyError,
    SessionNotFoundError,
)
from ..executor import Executor
from ..transformers import UIMessageStreamResponse, to_ui_message_stream
from ._bodies import ChatActions, ChatRequest, ContextRequest, chat_actions, parse_body, read_body
from ._streams import StreamRegistry

__all__ = [
    "Authenticate",
    "Authorize",
    "RunOptions",
    "error_response",
    "http_error_handler",
    "routes",
]

logger = logging.getLogger("helix_stream.server")

INTERNAL_ERROR = {"error": {"code": "internal_error", "message": "An internal error occurred."}}

# Keys of executor.run() that the chat route sets itself; run_options may not override them.
_RESERVED_RUN_OPTIONS = frozenset({"agent", "session_id", "input", "message_id", "auth"})


class Authenticate(Protocol):
    """``authenticate(request)``: return who is calling, or raise.

    Sync or async. Raise :class:`~helix_stream.errors.AuthenticationError` (401) or
    :class:`~helix_stream.errors.PermissionDeniedError` (403) to refuse the request; whatever
    it returns is passed to ``executor.run(..., auth=...)`` (``current_session().auth``).
    """

    def __call__(self, request: Request, /) -> Any: ...


class Authorize(Protocol):
    """``authorize(auth, session_id)``: may this caller use this session? Raise if not.

    Sync or async; called on every route once the session id is known (from the path or the
    body), with the value ``authenticate`` returned. Raise
    :class:`~helix_stream.errors.PermissionDeniedError` (403) to refuse; nothing is written.
    """

    def __call__(self, auth: Any, session_id: str, /) -> Any: ...


class RunOptions(Protocol):
    """``run_options(request, auth)``: extra keyword arguments for ``executor.run``.

    Sync or async; return e.g. ``{"tools_context": {...}, "runtime_context": {...}}``
    (per request, typically derived from ``auth``, the value ``authenticate`` returned).
    """

    def __call__(self, request: Request, auth: Any, /) -> Any: ...


Handler = Callable[[Request], Awaitable[Response]]


def error_response(exc: HelixError) -> JSONResponse:
    """The JSON answer for a refused request: ``{"error": {"code", "message"}}``."""
    return JSONResponse(exc.to_dict(), status_code=exc.http_status)


async def http_error_handler(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown path, wrong method) in the same JSON shape as ours.

    Install it with ``Starlette(exception_handlers={HTTPException: http_error_handler})``
    (:func:`~helix_stream.server.create_app` does), so clients parse one error format.
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


def routes(
    executor: Executor,
    agent: Agent,
    authenticate: Authenticate | None = None,
    *,
    authorize: Authorize | None = None,
    client_version: int = 5,
    max_body_bytes: int = 1_000_000,
    api_path: str = "/api/chat",
    context_path: str = "/context",
    run_options: RunOptions | None = None,
    on_error: Callable[[BaseException], str] | None = None,
    generate_message_id: Callable[[], str] | None = None,
    streams: StreamRegistry | None = None,
) -> list[BaseRoute]:
    """The chat server's routes, to mount in a Starlette or FastAPI app.

    * ``POST {api_path}`` — the body ``useChat`` sends; answers with the UI message stream.
    * ``POST {context_path}`` — ``{sessionId, items, key?}`` → ``{"recorded": n}``.
    * ``GET {api_path}/{id}/messages`` — the session's UI messages (a JSON list; no context rows).
    * ``GET {api_path}/{id}/stream`` — resume the session's active stream; 204 if none.

    Warning:
        Without ``authenticate`` every route is open to anyone who can reach it: they can read
        any session and steer any agent. Check the caller (here or in front of the app).

    Args:
        executor: Runs the turns and holds the sessions.
        agent: The agent every chat turn runs.
        authenticate: Called with the request before anything else on every route (see
            :class:`Authenticate`).
        authorize: Called with the caller and the session id on every route, to keep callers
            to their own sessions (see :class:`Authorize`).
        client_version: Major version of the ``ai`` npm package the clients run (5, 6 or 7);
            approval chunks need 6 or later.
        max_body_bytes: Larger request bodies are refused with 413.
        api_path: Where the chat routes live (``useChat``'s ``api``).
        context_path: Where ``POST /context`` lives.
        run_options: Extra ``executor.run`` arguments per request (see :class:`RunOptions`).
        on_error: Chooses the ``errorText`` sent for a failed turn (default: masked).
        generate_message_id: Makes the id of each new assistant message (default: random).
        streams: The registry of active streams (one is made if omitted).

    Returns:
        A list of Starlette routes.
    """
    if client_version not in (5, 6, 7):
        raise ValueError(f"client_version must be 5, 6 or 7, not {client_version!r}")
    registry = streams if streams is not None else StreamRegistry()
    new_message_id = generate_message_id or (lambda: f"msg-{uuid.uuid4().hex}")

    async def authenticated(request: Request) -> Any:
        if authenticate is None:
            return None
        return await _maybe_await(authenticate(request))

    async def authorized(auth: Any, session_id: str) -> None:
        if authorize is not None:
            await _maybe_await(authorize(auth, session_id))

    @_json_errors
    async def chat(request: Request) -> Response:
        auth = await authenticated(request)
        body = parse_body(await read_body(request, max_body_bytes), ChatRequest)
        session_id = body.id
        await authorized(auth, session_id)
        if body.trigger == "regenerate-message":
            raise FrameworkNotSupportedError(
                "regenerate-message is not supported by this server yet; send a new message, "
                "or rewind with executor.retry() in your own route"
            )
        actions = chat_actions(body)
        await _answer_waiting_calls(executor, session_id, actions)
        options: dict[str, Any] = {}
        if run_options is not None:
            options = dict(await _maybe_await(run_options(request, auth)) or {})
            if reserved := _RESERVED_RUN_OPTIONS & options.keys():
                raise TypeError(f"run_options may not set {sorted(reserved)}")
        if actions.user_text is None:
            # Continue the assistant message the client shows, under its id, so that the
            # stream's `start` and the stored messages agree (_turn.py: message_id).
            message_id = actions.continued_id
            user_input: Mapping[str, Any] | None = None
        else:
            message_id = new_message_id()
            user_input = {
                "role": "user",
                "content": actions.user_text,
                # Kept with the record: GET .../messages answers with the client's own id.
                "_message_id": actions.user_message_id,
            }
        result = executor.run(
            agent, session_id, user_input, message_id=message_id, auth=auth, **options
        )
        ui = to_ui_message_stream(
            result,
            client_version=client_version,
            original_messages=[m.model_dump() for m in body.messages],
            on_error=on_error,
        )
        return UIMessageStreamResponse(registry.record(session_id, ui))

    @_json_errors
    async def add_context(request: Request) -> Response:
        auth = await authenticated(request)
        body = parse_body(await read_body(request, max_body_bytes), ContextRequest)
        await authorized(auth, body.sessionId)
        recorded = await executor.add_context(body.sessionId, body.items, key=body.key)
        return JSONResponse({"recorded": recorded})

    @_json_errors
    async def messages(request: Request) -> Response:
        session_id = check_session_id(request.path_params["id"])
        await authorized(await authenticated(request), session_id)
        await executor.session(session_id)  # 404 for an unknown session
        return JSONResponse(await executor.ui_messages(session_id, on_error=on_error))

    @_json_errors
    async def resume(request: Request) -> Response:
        session_id = check_session_id(request.path_params["id"])
        await authorized(await authenticated(request), session_id)
        stream = registry.get(session_id)
        if stream is None:
            return Response(status_code=204)
        return UIMessageStreamResponse(stream.follow())

    base = api_path.rstrip("/")
    return [
        Route(base, chat, methods=["POST"], name="helix_chat"),
        Route(context_path, add_context, methods=["POST"], name="helix_context"),
        # {id:path}: a sub-agent's session id holds "/" ("<parent>/<call id>").
        Route(f"{base}/{{id:path}}/messages", messages, methods=["GET"], name="helix_messages"),
        Route(f"{base}/{{id:path}}/stream", resume, methods=["GET"], name="helix_resume"),
    ]


async def _answer_waiting_calls(executor: Executor, session_id: str, actions: ChatActions) -> None:
    """Pass the answers in the body to the executor: only for calls the session waits on.

    The client sends the whole history every time, with every tool part it ever saw; an
    answer to a call that is already settled must not be given again (for a client tool it
    would become a late-answer notice).

    Raises:
        SessionNotFoundError: the body continues a session that does not exist.
        SessionBusyError: the session is running a turn right now.
    """
    session = await executor.store.get_session(session_id)
    if session is None:
        if actions.user_text is None:
            raise SessionNotFoundError(
                f"no session {session_id!r} to continue; start it with a user message"
            )
        return
    if session.status == "running":
        raise SessionBusyError(
            f"session {session_id!r} is running a turn; wait for it to finish (or resume its "
            "stream with GET .../stream)"
        )
    waiting = {w.call.id for w in waiting_calls(await executor.log(session_id))}
    if not waiting:
        return
    by_approval = {approval_id_for(call_id): call_id for call_id in waiting}
    for approval in actions.approvals:
        if approval.approval_id in by_approval:
            await executor.respond_to_approval(
                session_id, approval.approval_id, approval.approved, approval.reason
            )
    for answer in actions.tool_answers:
        if answer.tool_call_id in waiting:
            await executor.submit_tool_result(session_id, answer.tool_call_id, answer.output)
