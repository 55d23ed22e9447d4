"""The chat routes as a FastAPI ``APIRouter``, listed in the app's OpenAPI schema (``/docs``).

This module owns :func:`fastapi_router`. FastAPI documents only its own ``APIRoute``s: the plain
Starlette routes of :func:`~helix_stream.server.routes` work in a FastAPI app but are missing
from ``/docs``. The router here serves the very same handlers (the body is still read with the
size limit and validated by the package, errors keep their JSON shape — FastAPI's own body
parsing and its 422 answers are not involved) and describes each route for the schema: its
path parameter, its request body (the JSON schema of the pydantic model the handler
validates), and its answers.

FastAPI is imported when :func:`fastapi_router` is called, never at import time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.routing import Route
from typing_extensions import Unpack

from ..agent import Agent
from ..session import Executor
from ._bodies import ChatRequest, ContextRequest
from ._options import Authenticate, ServerKeywords, ServerOptions, documents_server_options
from ._routes import routes

if TYPE_CHECKING:
    from fastapi import APIRouter

__all__ = ["fastapi_router"]

_ERROR = {"description": 'Refused: `{"error": {"code", "message"}}` (README, Errors)'}
_STREAM = {"description": "The AI SDK UI message stream (Server-Sent Events)",
           "content": {"text/event-stream": {"schema": {"type": "string"}}}}  # fmt: skip
_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"},
       "description": "The chat id (the session id)"}  # fmt: skip
_CALLBACK = [
    {"name": name, "in": "query", "required": name == "state", "schema": {"type": "string"},
     "description": text}
    for name, text in (
        ("state", "The signed one-time state of the sign-in link"),
        ("code", "The authorization code (when the user said yes)"),
        ("error", "The OAuth error code (when they did not)"),
    )
]  # fmt: skip


def _inline(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema`` with its ``#/$defs/...`` references replaced by what they name (the models
    are not recursive), so that it stands alone inside an OpenAPI operation."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inline(item, defs) for item in schema]
    return schema


def _body(model: type[ChatRequest] | type[ContextRequest]) -> dict[str, Any]:
    schema = model.model_json_schema()
    inlined = _inline(schema, schema.get("$defs", {}))
    return {"required": True, "content": {"application/json": {"schema": inlined}}}


def _operation(name: str) -> tuple[str, dict[str, Any], dict[int | str, Any]]:
    """The summary, extra OpenAPI fields and answers of the route ``name``."""
    errors: dict[int | str, Any] = {"4XX": _ERROR}
    table: dict[str, tuple[str, dict[str, Any], dict[int | str, Any]]] = {
        "helix_chat": (
            "Run a chat turn (the body useChat sends)",
            {"requestBody": _body(ChatRequest)},
            {200: _STREAM, **errors},
        ),
        "helix_context": (
            "Add context items to a session",
            {"requestBody": _body(ContextRequest)},
            {
                200: {"description": '`{"recorded": n, "warnings"?: ["unknown tool \'x\'"]}`'},
                **errors,
            },
        ),
        "helix_messages": (
            "The session's UI messages ([] when it has none yet)",
            {"parameters": [_ID]},
            {200: {"description": "A JSON list of UIMessages"}, **errors},
        ),
        "helix_resume": (
            "Resume the session's running stream",
            {"parameters": [_ID]},
            {200: _STREAM, 204: {"description": "No running stream"}, **errors},
        ),
        "helix_stop": (
            "Stop the session's running turn",
            {"parameters": [_ID]},
            {200: {"description": '`{"stopped": true|false}`, once the turn has ended'}, **errors},
        ),
        "helix_auth_callback": (
            "Complete a tool's sign-in (the OAuth redirect URI)",
            {"parameters": _CALLBACK},
            {200: {"description": "A page that sends the user back to the chat"}, **errors},
        ),
    }
    return table[name]


@documents_server_options
def fastapi_router(
    executor: Executor,
    agent: Agent[Any],
    authenticate: Authenticate | None = None,
    *,
    tags: list[str] | None = None,
    options: ServerOptions | None = None,
    **keywords: Unpack[ServerKeywords],
) -> APIRouter:
    """The chat routes as a FastAPI ``APIRouter``, documented in the app's OpenAPI schema.

    Example::

        from fastapi import FastAPI
        from helix_stream.server import fastapi_router, lifespan

        app = FastAPI(lifespan=lifespan)          # imports litellm at startup
        app.include_router(fastapi_router(executor, agent, authenticate, authorize=authorize))

    Args:
        executor: Runs the turns and holds the sessions.
        agent: The agent every chat turn runs.
        authenticate: As for :func:`~helix_stream.server.routes`.
        tags: The OpenAPI tags of the routes (default ``["chat"]``).
        options: The server options as one value (:class:`ServerOptions`); keywords win.
        {server options}

    Returns:
        An ``APIRouter`` to ``include_router`` (needs ``pip install fastapi``).
    """
    from fastapi import APIRouter
    from fastapi.responses import Response

    router = APIRouter(tags=list(tags) if tags is not None else ["chat"])
    for route in routes(executor, agent, authenticate, options=options, **keywords):
        assert isinstance(route, Route) and route.name is not None and route.methods
        summary, extra, answers = _operation(route.name)
        router.add_api_route(
            route.path,
            route.endpoint,
            methods=sorted(route.methods - {"HEAD"}),
            name=route.name,
            summary=summary,
            openapi_extra=extra,
            responses=answers,
            response_class=Response,
        )
    return router
