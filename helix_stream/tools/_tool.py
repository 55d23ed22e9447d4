"""The :class:`Tool` class (its type variables, its context's validation, its body) and
:class:`ToolUnavailable`, which a tool's body raises when the tool is gone."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import TypeVar

from .._json_schema import JsonSchemaInput
from .._result_size import check_result_limit
from .._tool_context import ContextT, ToolContext
from ..errors import ToolContextError, describe_validation

if TYPE_CHECKING:
    from .._auth_strategy import AuthStrategy


class ToolUnavailable(Exception):
    """Raised by a tool's body before it did anything: the tool is no longer there (its MCP
    server no longer lists it). The call gets a ``tool_unavailable`` not-executed result,
    as a call to an undeclared tool does.

    Example::

        async def call_remote(input: dict[str, object], ctx: hs.ToolContext) -> str:
            if not await still_offered():
                raise ToolUnavailable("search")   # nothing ran: the call gets tool_unavailable
            return "found"

        async def still_offered() -> bool:
            return False
    """


ExecuteFn = Callable[..., Any]

# A tool's types, as the user's own code spells them (``Tool[WeatherInput, WeatherContext,
# dict]``); each defaults to ``Any``, so that a bare ``Tool`` takes any tool (ContextT is
# ToolContext's own).
InputT = TypeVar("InputT", bound=BaseModel, default=Any)
OutputT = TypeVar("OutputT", default=Any)
DescriptionFn = Callable[[Any], str]


@dataclass(slots=True, kw_only=True)
class Tool(Generic[InputT, ContextT, OutputT]):
    """A tool the model may call: ``Tool[InputT, ContextT, OutputT]``, its input model, its
    context model and what ``execute`` returns (``hs.tool`` infers them from the function).

    Attributes:
        name: The name the model calls it by.
        description: A string, or a callable that receives the tool's validated context and
            returns the description (evaluated before each model call).
        input_schema: The pydantic model the call's arguments are validated against.
        context_schema: The pydantic model this tool's ``tools_context`` entry must match, or
            ``None`` if the tool needs no context.
        execute: ``execute(input, ctx)``, sync or async; ``None`` makes it a client tool.
        needs_approval: Pause for the app's approval before each call.
        auth: How the tool gets a token to act for the user (``hs.token_auth(...)``,
            ``hs.oauth_auth(...)``), read with ``await ctx.get_token()``; ``None``: none.
        context_key: The ``tools_context`` entry this tool reads, when it is not its own
            name: the tools of one MCP server share the server's entry.
        available: ``False`` keeps the tool in the offered list (the request's bytes, and so
            the provider's prompt cache, stay as they were) while a call to it gets a
            ``tool_unavailable`` result and runs nothing: an MCP server no longer lists it.
        origin: ``(server, name)`` for an MCP server's tool: the server's name and the
            tool's own name on it (its results carry both); ``None`` for any other tool.
        max_result_bytes: The most bytes of a result the model reads (the rest is cut, with
            a notice); ``None``: the run's ``max_tool_result_bytes``.
        side_effects: The tool acts on the world (sends, charges, files): in a session each
            call is written to the session's ledger before it runs and its result after, and
            a call found in flight after a crash is never run again by itself (the model gets
            ``outcome_unknown``; ``Executor.resolve_call`` settles it). Pass
            ``ctx.idempotency_key`` to the API the tool calls.

    Example::

        from pydantic import BaseModel

        class CityInput(BaseModel):
            city: str

        async def forecast(input: CityInput, ctx: hs.ToolContext) -> str:
            return f"sunny in {input.city}"

        tool: Tool[CityInput, None, str] = hs.tool(name="forecast", input_schema=CityInput,
                                                   execute=forecast)
        assert tool.name == "forecast"
    """

    name: str
    description: str | DescriptionFn = ""
    input_schema: type[InputT]
    context_schema: type[ContextT] | None = None
    execute: Callable[[InputT, ToolContext[ContextT]], OutputT | Awaitable[OutputT]] | None = None
    needs_approval: bool = False
    auth: AuthStrategy | None = None
    context_key: str | None = None
    available: bool = True
    origin: tuple[str, str] | None = None
    max_result_bytes: int | None = None
    side_effects: bool = False
    _frozen_context: type[BaseModel] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_result_limit(self.max_result_bytes, argument=f"tool {self.name!r}: max_result_bytes")
        if self.auth is not None:
            from .._auth_strategy import check_strategy

            self.auth = check_strategy(self.auth, tool_name=self.name)
        if self.context_schema is not None:
            # A frozen subclass: validation copies the entry and the tool cannot assign to it.
            schema: type[BaseModel] = self.context_schema  # type: ignore[assignment]
            config = ConfigDict(**{**schema.model_config, "frozen": True})
            self._frozen_context = type(
                self.context_schema.__name__, (self.context_schema,), {"model_config": config}
            )

    def __call__(self, fn: ExecuteFn) -> Tool:
        """Give a tool without a body one: ``@hs.tool(name="x", input_schema=X)`` on a function."""
        if self.execute is not None:
            raise TypeError(f"tool {self.name!r} already has an execute function")
        return replace(
            self,
            execute=_body(fn, self.input_schema),
            description=self.description or inspect.getdoc(fn) or "",
        )

    def resolve_context(self, tools_context: Mapping[str, Any] | None) -> Any:
        """Validate and freeze this tool's entry of ``tools_context``.

        Raises:
            ToolContextError: the entry is missing or does not match ``context_schema``.
        """
        if self._frozen_context is None:
            return None
        key = self.context_key or self.name
        if not tools_context or key not in tools_context:
            raise ToolContextError(
                f"Tool {self.name!r} declares a context_schema "
                f"({self.context_schema.__name__ if self.context_schema else ''}) but "
                f"tools_context has no {key!r} entry. Pass "
                f"tools_context={{{key!r}: {{...}}}}."
            )
        entry = tools_context[key]
        if isinstance(entry, BaseModel):
            entry = entry.model_dump()
        try:
            return self._frozen_context.model_validate(entry)
        except ValidationError as exc:
            problems = describe_validation(exc)
            raise ToolContextError(
                f"tools_context[{key!r}] does not match its context_schema: {problems}"
            ) from None

    @property
    def pauses_for(self) -> Literal["approval", "client"] | None:
        """Why a call of this tool pauses the turn: it waits for the app's ``"approval"``, or
        for a ``"client"`` to run it (no ``execute``); ``None`` when it runs at once."""
        if self.execute is None:
            return "client"
        return "approval" if self.needs_approval else None

    def describe(self, context: Any) -> str:
        """The description for this model call."""
        if callable(self.description):
            return str(self.description(context))
        return self.description

    def schema(self, context: Any) -> dict[str, Any]:
        """The OpenAI ``tools`` entry litellm expects."""
        params = self.input_schema.model_json_schema()
        params.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.describe(context),
                "parameters": params,
            },
        }

    async def run(self, input: InputT, ctx: ToolContext[ContextT]) -> OutputT:
        """Run ``execute`` (sync functions run as they are: keep them quick)."""
        assert self.execute is not None
        result = self.execute(input, ctx)
        if inspect.isawaitable(result):
            return await result
        return result


def _body(f: ExecuteFn, schema: type[BaseModel] | None = None) -> ExecuteFn:
    """``f`` as ``execute(input, ctx)``: a one-argument function does not get the context; the
    function of a JSON-schema tool gets the validated arguments as the dict they are."""
    body: ExecuteFn = f
    if len(inspect.signature(f).parameters) <= 1:
        body = lambda input, ctx: f(input)  # noqa: E731
    if schema is not None and issubclass(schema, JsonSchemaInput):
        return lambda input, ctx: body(input.root, ctx)
    return body
