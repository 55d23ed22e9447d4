"""The chat server's options, declared once: :class:`ServerOptions`.

:func:`~helix_stream.server.routes`, :func:`~helix_stream.server.create_app` and
:func:`~helix_stream.server.fastapi_router` take them as typed keywords
(``**options: Unpack[ServerKeywords]``, PEP 692: mypy checks each name and value) or as one
``ServerOptions(...)`` value (``options=``), and the route handlers hold the one value they
were built with. :class:`ServerKeywords` is the same fields in the form ``Unpack`` needs (mypy
reads keywords only from a class body); ``tests/server/test_server_options.py`` fails when the
two differ. The "Args" of the three functions are rendered from :class:`ServerOptions`' own
docstring (:func:`documents_server_options`). This module also holds the callables the options
name (:class:`Authenticate`, :class:`Authorize`, :class:`RunOptions`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict, TypeVar

from ._auth_callback import DEFAULT_AUTH_CALLBACK_PATH

if TYPE_CHECKING:
    from starlette.requests import Request

    from ..loop import Timeout
    from ..transformers._sse import OnDisconnect
    from ._shared_streams import SharedStreamRegistry
    from ._streams import StreamRegistry
    from ._turns import RunningTurns, StopElsewhere

__all__ = [
    "DETACHED_TIMEOUT",
    "Authenticate",
    "Authorize",
    "RunOptions",
    "ServerKeywords",
    "ServerOptions",
    "documents_server_options",
]

DETACHED_TIMEOUT = 600.0
"""Default seconds a turn whose client went away runs on (``on_disconnect="continue"``)."""


class Authenticate(Protocol):
    """``authenticate(request)``: return who is calling, or raise.

    Sync or async. Raise :class:`~helix_stream.errors.AuthenticationError` (401) or
    :class:`~helix_stream.errors.PermissionDeniedError` (403) to refuse the request; whatever
    it returns is passed to ``executor.run(..., auth=...)`` (``current_session().auth``).

    Example::

        from starlette.requests import Request

        def by_api_key(request: Request) -> str:
            if request.headers.get("x-api-key") != os.environ["CHAT_KEY"]:
                raise hs.PermissionDeniedError("wrong key")
            return "user-1"

        check: Authenticate = by_api_key
        app = create_app(executor, agent, check)
    """

    def __call__(self, request: Request, /) -> Any: ...


class Authorize(Protocol):
    """``authorize(auth, session_id)``: may this caller use this session? Raise if not.

    Sync or async; called on every route once the session id is known (from the path or the
    body), with the value ``authenticate`` returned. Raise
    :class:`~helix_stream.errors.PermissionDeniedError` (403) to refuse; nothing is written.

    Example::

        def own_sessions(auth: str, session_id: str) -> None:
            if not session_id.startswith(f"{auth}-"):
                raise hs.PermissionDeniedError("not your conversation")

        rule: Authorize = own_sessions
        app = create_app(executor, agent, check_caller, authorize=rule)
    """

    def __call__(self, auth: Any, session_id: str, /) -> Any: ...


class RunOptions(Protocol):
    """``run_options(request, auth)``: extra keyword arguments for ``executor.run``.

    Sync or async; return e.g. ``{"tools_context": {...}, "runtime_context": {...}}``
    (per request, typically derived from ``auth``, the value ``authenticate`` returned).

    Example::

        from typing import Any

        from starlette.requests import Request

        def per_user(request: Request, auth: str) -> dict[str, Any]:
            return {"runtime_context": {"user_id": auth},
                    "tools_context": {"github": {"headers": {"Authorization": f"Bearer {auth}"}}}}

        options: RunOptions = per_user
        app = create_app(executor, agent, check_caller, run_options=options)
    """

    def __call__(self, request: Request, auth: Any, /) -> Any: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerOptions:
    """How the chat server serves (README, "Options").

    Example::

        options = ServerOptions(client_version=6, on_disconnect="cancel")
        app = create_app(executor, agent, authenticate, options=options)

    Attributes:
        authorize: Keeps callers to their own sessions, on every route (:class:`Authorize`).
        client_version: The clients' ``ai`` npm major version (5, 6 or 7; approvals: 6+).
        max_body_bytes: Larger request bodies are refused with 413.
        api_path: Where the chat routes live (``useChat``'s ``api``; default ``/api/chat``).
        context_path: Where ``POST`` context lives (default ``/context``).
        run_options: Extra ``executor.run`` arguments per request (see :class:`RunOptions`).
        on_error: Chooses the ``errorText`` sent for a failed turn (default: masked).
        generate_message_id: Makes the id of each new assistant message (default: random).
        streams: Where active streams are kept for resume (default: by the store's kind).
        send_sources: Send ``source-url`` parts for the sources the model cited.
        on_disconnect: What a chat client that goes away does to its turn: ``"continue"``
            (default) lets the turn run to its end, resumable from ``GET .../stream``, until
            the stop route ends it; ``"cancel"`` cancels it at once (stored as interrupted).
        detached_timeout: With ``"continue"``: seconds a turn whose client went away may run
            on (default 600; ``None``: only the run's own limits), then cancelled.
        turns: This process's running turns, for the stop route (a ``RunningTurns``).
        stop_elsewhere: Stops a turn running in another process (``StopElsewhere``),
            instead of the stop through the store (``Executor.request_stop``).
        max_connections: litellm's pool per host, process-wide (default 4,096; litellm's: 500).
        auth_callback_path: Where a browser comes back from a tool's sign-in (``None``: no
            such route).
        auth_redirect: The app's page to send it on to (default: a page of ours).
        timeout: Turns' default limits (``SERVER_TIMEOUT``; README "Timeouts"; ``None``:
            none).
    """

    authorize: Authorize | None = None
    client_version: int = 7
    max_body_bytes: int = 1_000_000
    api_path: str = "/api/chat"
    context_path: str = "/context"
    run_options: RunOptions | None = None
    on_error: Callable[[BaseException], str] | None = None
    generate_message_id: Callable[[], str] | None = None
    streams: StreamRegistry | SharedStreamRegistry | None = None
    send_sources: bool = False
    on_disconnect: OnDisconnect = "continue"
    detached_timeout: float | None = DETACHED_TIMEOUT
    turns: RunningTurns | None = None
    stop_elsewhere: StopElsewhere | None = None
    max_connections: int | None = None
    auth_callback_path: str | None = DEFAULT_AUTH_CALLBACK_PATH
    auth_redirect: str | None = None
    timeout: Timeout | Literal["default"] | None = "default"


class ServerKeywords(TypedDict, total=False):
    """:class:`ServerOptions` as keywords (PEP 692): ``create_app(executor, agent, **options)``.

    Example::

        keywords: ServerKeywords = {"client_version": 6, "max_body_bytes": 2_000_000}
        app = create_app(executor, agent, check_caller, **keywords)
    """

    authorize: Authorize | None
    client_version: int
    max_body_bytes: int
    api_path: str
    context_path: str
    run_options: RunOptions | None
    on_error: Callable[[BaseException], str] | None
    generate_message_id: Callable[[], str] | None
    streams: StreamRegistry | SharedStreamRegistry | None
    send_sources: bool
    on_disconnect: OnDisconnect
    detached_timeout: float | None
    turns: RunningTurns | None
    stop_elsewhere: StopElsewhere | None
    max_connections: int | None
    auth_callback_path: str | None
    auth_redirect: str | None
    timeout: Timeout | Literal["default"] | None


def server_options(options: ServerOptions | None, keywords: ServerKeywords) -> ServerOptions:
    """One :class:`ServerOptions` from ``options=`` and keywords (keywords win).

    Raises:
        TypeError: a keyword that is not a server option (naming the closest one).
    """
    import dataclasses
    import difflib

    names = [f.name for f in dataclasses.fields(ServerOptions)]
    for name in keywords.keys() - names:
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        hint = f": did you mean `{close[0]}`?" if close else ""
        raise TypeError(f"unexpected server option {name!r}{hint}")
    base = options if options is not None else ServerOptions()
    return dataclasses.replace(base, **keywords)


_Fn = TypeVar("_Fn", bound=Callable[..., Any])
_MARKER = re.compile(r"^( *)\{server options\}$", re.MULTILINE)


def documents_server_options(fn: _Fn) -> _Fn:
    """Write :class:`ServerOptions`' "Attributes" into ``fn``'s "Args" at the line
    ``{server options}``: described once, listed by each of the three functions."""
    section = (ServerOptions.__doc__ or "").split("Attributes:\n", 1)[1].rstrip()
    lines = [line[8:] for line in section.splitlines()]
    if fn.__doc__:
        fn.__doc__ = _MARKER.sub(
            lambda m: "\n".join(m.group(1) + line if line else "" for line in lines), fn.__doc__
        )
    return fn
