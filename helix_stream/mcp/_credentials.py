"""Per-request credentials for an MCP server: the schema a server declares, and the value.

A server that needs the caller's own credentials (a user's GitHub token) declares which ones a
request may bring: header names for an HTTP server (``request_headers={"Authorization"}``),
environment variables for a stdio server (``request_env={"GITHUB_TOKEN"}``). Each run then
passes them in ``tools_context`` under the server's name::

    tools_context={"github": {"headers": {"Authorization": "Bearer ..."}}}

The entry is validated like any tool's context, before the run makes a request: a missing
entry, an undeclared name or a value with a line break is a ``ToolContextError`` (whose text
names the offending names, never a value). The validated entry becomes :class:`Credentials`,
which only the transport reads: it is the key of the connection it needs (one connection per
distinct set, see ``_pool``), and nothing of it reaches the model, the log or a span.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError, create_model

from ..errors import InvalidRequestError, ToolContextError, describe_validation

__all__ = [
    "NO_CREDENTIALS",
    "Credentials",
    "checked_credentials",
    "credentials_of",
    "request_schema",
]

Kind = Literal["headers", "env"]


@dataclass(frozen=True, slots=True)
class Credentials:
    """One request's credentials, as the transport applies them (sorted, hashable)."""

    headers: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        # Never the values: a repr ends up in logs and tracebacks.
        names = [name for name, _ in (*self.headers, *self.env)]
        return f"Credentials({names})"


NO_CREDENTIALS = Credentials()


def _normal(kind: Kind, name: str) -> str:
    return name.lower() if kind == "headers" else name  # header names are case-insensitive


def request_schema(kind: Kind, allowed: Collection[str]) -> type[BaseModel] | None:
    """The ``context_schema`` of a server whose requests may bring ``allowed`` names
    (``None`` when they may bring none)."""
    if isinstance(allowed, str):
        raise InvalidRequestError(f"request_{kind} takes a collection of names, not one string")
    names = frozenset(_normal(kind, name) for name in allowed)
    if not names:
        return None
    shown = sorted(names)

    def check(value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(key for key in value if _normal(kind, key) not in names)
        if unknown:
            raise ValueError(f"{unknown} may not be set per request; this server allows {shown}")
        broken = sorted(key for key, item in value.items() if "\r" in item or "\n" in item)
        if broken:
            raise ValueError(f"the values of {broken} hold a line break")
        return value

    field: Any = (Annotated[dict[str, str], AfterValidator(check)], ...)
    model: type[BaseModel] = create_model(
        f"MCPRequest{kind.capitalize()}",
        __config__=ConfigDict(extra="forbid"),
        **{kind: field},
    )
    return model


def credentials_of(context: Any) -> Credentials:
    """The credentials in a validated ``tools_context`` entry (``None``: none)."""
    if context is None:
        return NO_CREDENTIALS
    headers: Mapping[str, str] = getattr(context, "headers", None) or {}
    env: Mapping[str, str] = getattr(context, "env", None) or {}
    return Credentials(headers=tuple(sorted(headers.items())), env=tuple(sorted(env.items())))


def checked_credentials(
    server: str, schema: type[BaseModel] | None, context: Mapping[str, Any] | None
) -> Credentials:
    """The credentials a caller passed for ``server`` (its ``tools_context`` entry), checked
    against the server's ``request_headers=``/``request_env=`` schema.

    Raises:
        InvalidRequestError: the server takes no per-request credentials.
        ToolContextError: the entry does not fit the schema.
    """
    if context is None:
        return NO_CREDENTIALS
    if schema is None:
        raise InvalidRequestError(
            f"MCP server {server!r} takes no per-request credentials: declare them "
            "with request_headers= (HTTP) or request_env= (stdio)"
        )
    try:
        return credentials_of(schema.model_validate(context))
    except ValidationError as exc:
        raise ToolContextError(
            f"the context for MCP server {server!r} is invalid: {describe_validation(exc)}"
        ) from None
