"""An offered MCP tool as an :class:`~helix_stream.Tool`, usable anywhere ``tools=`` is taken.

Its input schema is the server's JSON schema, offered as it is and validated before the call
(invalid input is an error result the model reads, as for any tool). Its context is the
server's ``tools_context`` entry (``context_key``). Its body sends ``tools/call`` and maps the
result (``_results``); cancelling the tool's task cancels the request, and the ``mcp`` package
then tells the server (``notifications/cancelled`` on stdio, the request's stream closed over
HTTP).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from .._json_schema import JsonSchemaInput, json_schema_model
from ..errors import InvalidRequestError, ToolProviderAuthError, ToolProviderError
from ..tools import Tool, ToolContext, ToolUnavailable
from ._offer import MCPOffer, MCPToolSpec
from ._results import tool_output

__all__ = ["ApprovalRule", "CallFn", "CheckFn", "ToolBuilder", "build_tool", "needs_approval"]

ApprovalRule = bool | Collection[str] | Callable[[MCPToolSpec], bool]
"""``needs_approval=``: every tool or none, the tools named (by their name on the server or
the offered one), or a predicate of the offered tool."""

CallFn = Callable[[str, dict[str, Any], Any, Any], Awaitable[Any]]
"""``call(remote_name, arguments, context, token)``: send ``tools/call``, return its result."""

CheckFn = Callable[[str, Any, Any], Awaitable[bool]]
"""``check(remote_name, context, token)``: whether the server still lists the tool."""


def needs_approval(rule: ApprovalRule, spec: MCPToolSpec) -> bool:
    """Whether calls of ``spec`` pause for the app's approval."""
    if isinstance(rule, bool):
        return rule
    if callable(rule):
        return bool(rule(spec))
    return spec.remote_name in rule or spec.name in rule


def check_approval_rule(rule: object) -> ApprovalRule:
    """``rule`` if it is one ``needs_approval=`` takes.

    Raises:
        InvalidRequestError: it is none of a bool, a collection of names or a callable.
    """
    if isinstance(rule, bool) or callable(rule):
        return rule
    names = isinstance(rule, Collection) and not isinstance(rule, str)
    if names and all(isinstance(name, str) for name in rule):  # type: ignore[attr-defined]
        return rule  # type: ignore[return-value]
    raise InvalidRequestError(
        "needs_approval= takes a bool, a set of tool names or a function of the tool "
        f"(an MCPToolSpec), not {type(rule).__name__}"
    )


def build_tool(
    spec: MCPToolSpec,
    *,
    server: str,
    call: CallFn,
    context_schema: Any,
    approval: bool,
    available: bool,
    auth: Any = None,
    check: CheckFn | None = None,
) -> Tool:
    """The tool for ``spec`` (``check``: asked before each call, which it answers
    ``tool_unavailable`` when the server no longer lists the tool).

    Raises:
        ToolProviderError: the server gave it an input schema that is not a valid one.
    """
    try:
        schema = json_schema_model(spec.input_schema, name=spec.name)
    except InvalidRequestError as exc:
        raise ToolProviderError(
            f"MCP server {server!r} lists the tool {spec.remote_name!r} with an invalid input "
            f"schema ({exc.message}); the server must be fixed.",
            server=server,
        ) from None
    remote = spec.remote_name

    async def execute(input: JsonSchemaInput, ctx: ToolContext) -> Any:
        # A server with an auth strategy: the token as any tool with auth= gets it (a sign-in
        # the turn waits for, the step's cache, the token store); it rides as a credential.
        token = await ctx.get_token() if auth is not None else None
        if check is not None and not await check(remote, ctx.context, token):
            raise ToolUnavailable(remote)
        try:
            return tool_output(await call(remote, input.root, ctx.context, token))
        except ToolProviderAuthError:
            if token is None:
                raise
            ctx.reject_token()  # the server refused it: out of the token store, ask again

    return Tool(
        name=spec.name,
        description=spec.description,
        input_schema=schema,
        context_schema=context_schema,
        execute=execute,
        needs_approval=approval,
        context_key=server,
        available=available,
        auth=auth,
        origin=(server, remote),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolBuilder:
    """How one server's offered tools are made: the server's name, how they call it, the
    context they take, which of them need approval, and the auth strategy they share."""

    server: str
    call: CallFn
    context_schema: Any
    approval: ApprovalRule
    auth: Any = None

    def build(
        self, offer: MCPOffer, gone: Collection[str] = (), check: CheckFn | None = None
    ) -> list[Tool]:
        """The tools of ``offer`` (those in ``gone``: offered, not available)."""
        return [
            build_tool(
                spec,
                server=self.server,
                call=self.call,
                context_schema=self.context_schema,
                approval=needs_approval(self.approval, spec),
                available=spec.name not in gone,
                auth=self.auth,
                check=check,
            )
            for spec in offer.tools
        ]
