"""Errors about what a caller sent: an invalid body, argument, context item or tools context, a
caller who is not authenticated or not allowed, and a feature the store or runtime cannot honour."""

from __future__ import annotations

from ._base import HelixError

__all__ = [
    "AuthenticationError",
    "ContextValidationError",
    "FrameworkNotSupportedError",
    "InvalidRequestError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "ToolContextError",
]


class ContextValidationError(HelixError):
    """A context item is invalid (unknown kind, ``__finish__`` switched off, over 32 KiB, ...).

    Example::

        from helix_stream.errors import ContextValidationError

        try:
            await executor.add_context("session-1", [hs.disable_tools(["__finish__"])])
        except ContextValidationError as exc:     # __finish__ stays on; nothing is queued
            print(exc.code, exc.message)          # validation_error ...
    """

    code = "validation_error"
    http_status = 400


class ToolContextError(HelixError):
    """A tool's entry in ``tools_context`` is missing or does not match its ``context_schema``.

    Example::

        from helix_stream.errors import ToolContextError

        try:
            await hs.generate_text(model="helix/demo", prompt="Weather?", tools=[get_weather],
                                   tools_context={"get_weather": {"wrong_field": 1}})
        except ToolContextError as exc:           # refused before any request is sent
            print(exc.message)                    # names the tool and the field, never a value
    """

    code = "validation_error"
    http_status = 400


class InvalidRequestError(HelixError):
    """A request body or argument has the wrong shape.

    Example::

        from helix_stream.errors import InvalidRequestError

        try:
            hs.MCPServer.http("ftp://example.com/mcp", name="files")
        except InvalidRequestError as exc:
            print(exc.code, exc.http_status)      # invalid_request 400
    """

    code = "invalid_request"
    http_status = 400


class PayloadTooLargeError(InvalidRequestError):
    """A request body is larger than the server accepts.

    Example::

        from helix_stream.errors import PayloadTooLargeError
        from helix_stream.server import ServerOptions

        # routes()/create_app() answer 413 with this error's body past max_body_bytes:
        options = ServerOptions(max_body_bytes=1_000_000)
        assert PayloadTooLargeError.http_status == 413
    """

    code = "payload_too_large"
    http_status = 413


class AuthenticationError(HelixError):
    """The caller did not authenticate (raise it from ``authenticate``).

    Example::

        from helix_stream.errors import AuthenticationError
        from starlette.requests import Request

        def authenticate(request: Request) -> str:            # routes(..., authenticate)
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            if token != "let-me-in":
                raise AuthenticationError("send Authorization: Bearer <token>")   # a 401 body
            return "user-1"
    """

    code = "unauthenticated"
    http_status = 401


class PermissionDeniedError(HelixError):
    """The caller is known but may not do this (raise it from ``authenticate``).

    Example::

        from helix_stream.errors import PermissionDeniedError

        def authorize(user_id: str, session_id: str) -> None:   # routes(..., authorize=authorize)
            if not session_id.startswith(f"{user_id}-"):
                raise PermissionDeniedError("not your conversation")   # a 403 body; nothing written
    """

    code = "forbidden"
    http_status = 403


class FrameworkNotSupportedError(HelixError):
    """The store or runtime in use cannot honour this feature; nothing was written.

    Example::

        from helix_stream.errors import FrameworkNotSupportedError
        from helix_stream.server import SharedStreamRegistry

        try:
            streams = SharedStreamRegistry(hs.SQLiteStore("helix.db"))   # no shared stream log
        except FrameworkNotSupportedError as exc:  # refused at entry; nothing written
            print(exc.message)                     # says to use StreamRegistry
    """

    code = "framework_not_supported"
    http_status = 501
