"""``GET /api/auth/callback``: where a user's browser comes back from signing in to a service.

The OAuth service redirects the browser here with ``state`` and ``code`` (or ``error``). The
route calls :meth:`~helix_stream.Executor.complete_authorization`, which checks the signed
one-time state, exchanges the code and marks the parked call; then it answers a small HTML
page that tells the user to go back to the chat, or redirects to the app's own page
(``auth_redirect``) with ``session_id``, ``tool_call_id`` and ``status`` in the query. The
chat page then resumes the session (``POST /api/chat`` with no new message): the turn goes on.
Our page tells the chat tab itself: it posts ``{type: "helix-auth", sessionId, toolCallId,
status}`` on the same-origin ``BroadcastChannel("helix-stream-auth")`` (and to
``window.opener``, for a chat that opened it as a popup), so a chat served from the same origin
continues the turn without the user coming back to press anything.

The route does not call ``authenticate``: a browser coming back from another site carries
no ``Authorization`` header, and the state is what authorizes the request (signed with the
executor's ``auth_secret``, good once, for one call of one session). A bad, expired or
replayed state is a 400 (``authorization_state_invalid``) and nothing is written: a browser
gets it as a page, any other client as the JSON error body.
"""

from __future__ import annotations

import html
import json
import logging
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from ..agent import Agent
from ..auth import AuthorizationResult
from ..errors import AuthorizationStateError, HelixError
from ..session import Executor

__all__ = ["DEFAULT_AUTH_CALLBACK_PATH", "auth_callback_routes"]

logger = logging.getLogger("helix_stream.server")

DEFAULT_AUTH_CALLBACK_PATH = "/api/auth/callback"

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto">
<h1 style="font-size: 1.25rem">{title}</h1><p>{text}</p>{script}</body></html>
"""

# Tells the chat tab (same origin) that the sign-in is done: it continues the turn by itself.
_NOTIFY = """<script>
(() => {{
  const done = {data};
  try {{ new BroadcastChannel("helix-stream-auth").postMessage(done); }} catch (e) {{}}
  try {{ if (window.opener) window.opener.postMessage(done, location.origin); }} catch (e) {{}}
}})();
</script>"""


def _page(title: str, text: str, status: int = 200, script: str = "") -> HTMLResponse:
    body = _PAGE.format(title=html.escape(title), text=html.escape(text), script=script)
    # No referrer: the URL of this page holds the one-time state and the code.
    headers = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
    return HTMLResponse(body, status_code=status, headers=headers)


def _notify(result: AuthorizationResult) -> str:
    done = {
        "type": "helix-auth",
        "sessionId": result.session_id,
        "toolCallId": result.tool_call_id,
        "status": result.status,
    }
    # JSON inside <script>: "<", ">" and "&" escaped, so no value can end the element.
    data = json.dumps(done)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        data = data.replace(char, escaped)
    return _NOTIFY.format(data=data)


def _done_page(result: AuthorizationResult) -> HTMLResponse:
    if result.status == "authorized":
        return _page(
            "Signed in",
            f"You are signed in to {result.strategy}. The chat carries on: you can close this tab.",
            script=_notify(result),
        )
    return _page(
        "Not signed in",
        f"The sign-in to {result.strategy} was not completed. Return to the chat.",
        script=_notify(result),
    )


def _redirect(target: str, result: AuthorizationResult) -> RedirectResponse:
    parts = urlsplit(target)
    query = [
        *parse_qsl(parts.query, keep_blank_values=True),
        ("session_id", result.session_id),
        ("tool_call_id", result.tool_call_id),
        ("status", result.status),
    ]
    location = urlunsplit(parts._replace(query=urlencode(query)))
    return RedirectResponse(location, status_code=303, headers={"cache-control": "no-store"})


def _refused(request: Request, exc: HelixError) -> Response:
    if "text/html" in request.headers.get("accept", ""):
        return _page(
            "This sign-in link cannot be used",
            "It has expired or was used already. Go back to the chat and follow the newest "
            "sign-in link.",
            status=exc.http_status,
        )
    return JSONResponse(exc.to_dict(), status_code=exc.http_status)


def _failed(request: Request) -> Response:
    """A masked 500 (the store failed, say): never the exception's text."""
    if "text/html" in request.headers.get("accept", ""):
        text = "The sign-in could not be completed. Go back to the chat and try again."
        return _page("Something went wrong", text, status=500)
    body = {"error": {"code": "internal_error", "message": "An internal error occurred."}}
    return JSONResponse(body, status_code=500)


def auth_callback_routes(
    executor: Executor, agent: Agent, *, path: str | None, redirect_to: str | None
) -> list[BaseRoute]:
    """The sign-in callback route at ``path`` (none when ``path`` is ``None``; see the module
    docstring); ``redirect_to``: the app's page to send the browser to instead of ours."""
    if path is None:
        return []

    async def callback(request: Request) -> Response:
        query = request.query_params
        try:
            state = query.get("state")
            if not state:
                raise AuthorizationStateError("the sign-in callback carries no state")
            result = await executor.complete_authorization(
                state, query.get("code"), error=query.get("error"), agent=agent
            )
        except HelixError as exc:
            return _refused(request, exc)
        except Exception:
            logger.exception("GET %s failed", request.url.path)
            return _failed(request)
        if redirect_to is not None:
            return _redirect(redirect_to, result)
        return _done_page(result)

    return [Route(path, callback, methods=["GET"], name="helix_auth_callback")]
