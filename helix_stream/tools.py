"""Tools: ``tool()`` / :class:`Tool`, the per-call :class:`ToolContext`, context_schema resolution.

A tool's input is validated against its ``input_schema`` (a pydantic model, or one made from a
JSON schema) before ``execute`` runs. A tool with a ``context_schema`` receives in
``ctx.context`` only its own entry of ``tools_context``, validated and frozen: a tool
never sees the runtime context or another tool's context.

A tool with ``auth=`` (a strategy from :mod:`helix_stream.auth`) gets its token through
``await ctx.get_token()``; the loop gives its context the step's token cache. The context
itself (:class:`ToolContext`) is defined in ``helix_stream/_tool_context.py``, below the
token cache and the sandbox, and re-exported here.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, get_origin, overload

from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from typing_extensions import TypeVar

from ._json_schema import JsonSchemaInput, json_schema_model
from ._result_size import check_result_limit
from ._tool_context import ContextT, ToolContext
from .errors import ToolContextError, describe_validation

if TYPE_CHECKING:
    from ._auth_strategy import AuthStrategy

__all__ = [
    "FINISH_TOOL_NAME",
    "Tool",
    "ToolContext",
    "ToolDecorator",
    "ToolUnavailable",
    "approval_id",
    "dump_output",
    "finish_tool",
    "resolve_contexts",
    "tool",
    "tools_by_name",
]

FINISH_TOOL_NAME = "__finish__"


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


def approval_id(tool_call_id: str) -> str:
    """The approval id of a call (what ``tool-approval-request`` announces and answers name).

    Example::

        assert approval_id("call_1") == "approval-call_1"
        await executor.respond_to_approval("session-1", approval_id("call_1"), approved=True)
    """
    return f"approval-{tool_call_id}"


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
    _frozen_context: type[BaseModel] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        check_result_limit(self.max_result_bytes, argument=f"tool {self.name!r}: max_result_bytes")
        if self.auth is not None:
            from ._auth_strategy import check_strategy

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


def _signature_tool(fn: ExecuteFn) -> tuple[type[BaseModel], ExecuteFn]:
    """Derive (input_schema, execute(input, ctx)) from a function's signature.

    ``def f(input: Model, ctx)`` is used as it is; ``def f(city: str, days: int = 1, ctx=...)``
    gets a generated model of its non-context parameters and is called with keywords.
    """
    params = list(inspect.signature(fn).parameters.values())
    hints = inspect.get_annotations(fn, eval_str=True)

    def is_ctx(p: inspect.Parameter) -> bool:
        hint = hints.get(p.name)
        # ``ctx: hs.ToolContext[WeatherContext]`` is a parametrized alias of the class.
        return (get_origin(hint) or hint) is ToolContext or p.name in ("ctx", "context")

    first = params[0] if params else None
    if (
        first is not None
        and isinstance(hints.get(first.name), type)
        and issubclass(hints[first.name], BaseModel)
    ):
        wants_ctx = len(params) > 1
        model: type[BaseModel] = hints[first.name]

        def call_model(input: BaseModel, ctx: ToolContext) -> Any:
            return fn(input, ctx) if wants_ctx else fn(input)

        return model, call_model

    fields: dict[str, Any] = {}
    ctx_name: str | None = None
    for p in params:
        if is_ctx(p):
            ctx_name = p.name
            continue
        default = ... if p.default is inspect.Parameter.empty else p.default
        fields[p.name] = (hints.get(p.name, Any), default)
    model = create_model(f"{fn.__name__}_input", **fields)

    def call_kwargs(input: BaseModel, ctx: ToolContext) -> Any:
        kwargs = {name: getattr(input, name) for name in fields}
        if ctx_name is not None:
            kwargs[ctx_name] = ctx
        return fn(**kwargs)

    return model, call_kwargs


# How ``hs.tool`` keeps a function's types (mypy picks the first overload that fits):
# ``execute(input: Model, ctx: ToolContext[Context]) -> Output`` (sync or async) gives a
# ``Tool[Model, Context, Output]``; any other function (keyword parameters, no context) a
# ``Tool[Any, Any, Output]``.
AsyncExecute = Callable[[InputT, "ToolContext[ContextT]"], Awaitable[OutputT]]
SyncExecute = Callable[[InputT, "ToolContext[ContextT]"], OutputT]


class ToolDecorator(Protocol):
    """What ``@hs.tool(...)`` (with options, before the function) returns.

    Example::

        from pydantic import BaseModel

        class Keys(BaseModel):
            api_key: str

        decorate: ToolDecorator = hs.tool(context_schema=Keys, needs_approval=True)

        @decorate
        async def delete_file(path: str, ctx: hs.ToolContext[Keys]) -> str:
            return f"deleted {path}"
    """

    @overload
    def __call__(
        self, fn: AsyncExecute[InputT, ContextT, OutputT], /
    ) -> Tool[InputT, ContextT, OutputT]: ...
    @overload
    def __call__(
        self, fn: SyncExecute[InputT, ContextT, OutputT], /
    ) -> Tool[InputT, ContextT, OutputT]: ...
    @overload
    def __call__(self, fn: Callable[..., Awaitable[OutputT]], /) -> Tool[Any, Any, OutputT]: ...
    @overload
    def __call__(self, fn: Callable[..., OutputT], /) -> Tool[Any, Any, OutputT]: ...


@overload
def tool(fn: AsyncExecute[InputT, ContextT, OutputT], /) -> Tool[InputT, ContextT, OutputT]: ...
@overload
def tool(fn: SyncExecute[InputT, ContextT, OutputT], /) -> Tool[InputT, ContextT, OutputT]: ...
@overload
def tool(fn: Callable[..., Awaitable[OutputT]], /) -> Tool[Any, Any, OutputT]: ...
@overload
def tool(fn: Callable[..., OutputT], /) -> Tool[Any, Any, OutputT]: ...
@overload
def tool(
    *,
    name: str,
    description: str | DescriptionFn | None = None,
    input_schema: type[InputT],
    context_schema: type[ContextT] | None = None,
    execute: AsyncExecute[InputT, ContextT, OutputT],
    needs_approval: bool = False,
    auth: AuthStrategy | None = None,
    max_result_bytes: int | None = None,
) -> Tool[InputT, ContextT, OutputT]: ...
@overload
def tool(
    *,
    name: str,
    description: str | DescriptionFn | None = None,
    input_schema: type[InputT],
    context_schema: type[ContextT] | None = None,
    execute: SyncExecute[InputT, ContextT, OutputT],
    needs_approval: bool = False,
    auth: AuthStrategy | None = None,
    max_result_bytes: int | None = None,
) -> Tool[InputT, ContextT, OutputT]: ...
@overload
def tool(
    *,
    name: str,
    description: str | DescriptionFn | None = None,
    input_schema: type[InputT],
    context_schema: type[ContextT] | None = None,
    execute: None = None,
    needs_approval: bool = False,
    auth: AuthStrategy | None = None,
    max_result_bytes: int | None = None,
) -> Tool[InputT, ContextT, Any]: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | DescriptionFn | None = None,
    input_schema: type[BaseModel] | Mapping[str, Any] | None = None,
    context_schema: type[BaseModel] | None = None,
    execute: ExecuteFn | None = None,
    needs_approval: bool = False,
    auth: AuthStrategy | None = None,
    max_result_bytes: int | None = None,
) -> ToolDecorator: ...
def tool(
    fn: ExecuteFn | None = None,
    /,
    *,
    name: str | None = None,
    description: str | DescriptionFn | None = None,
    input_schema: type[BaseModel] | Mapping[str, Any] | None = None,
    context_schema: type[Any] | None = None,
    execute: ExecuteFn | None = None,
    needs_approval: bool = False,
    auth: AuthStrategy | None = None,
    max_result_bytes: int | None = None,
) -> Any:
    """Define a tool, directly or as a decorator.

    Examples::

        from pydantic import BaseModel

        class WeatherContext(BaseModel):
            api_key: str

        class WeatherInput(BaseModel):
            city: str

        @hs.tool(context_schema=WeatherContext)
        async def weather(input: WeatherInput, ctx: hs.ToolContext[WeatherContext]) -> str:
            '''Get the weather in a city.'''
            return f"sunny in {input.city}"            # ctx.context.api_key: this tool's own

        async def do_lookup(input: WeatherInput, ctx: hs.ToolContext) -> str:
            return input.city

        lookup = hs.tool(name="lookup", input_schema=WeatherInput, execute=do_lookup)
        ask_user = hs.tool(name="ask_user", input_schema=WeatherInput)   # no execute: client tool
        search = hs.tool(name="search", execute=do_lookup,
                         input_schema={"type": "object", "properties": {"q": {"type": "string"}}})

    Args:
        name: Defaults to the function's name.
        description: A string or ``callable(context) -> str``; defaults to the docstring.
        input_schema: A pydantic model; derived from the signature when omitted. A JSON
            schema (a dict) is offered as it is and validated with ``jsonschema``; ``execute``
            then receives the arguments as a dict.
        context_schema: A pydantic model this tool's ``tools_context`` entry must match.
        execute: ``execute(input, ctx)``, sync or async. Without it (and without a decorated
            function) the tool is a client tool: the run pauses until the client answers.
        needs_approval: Pause each call until the app approves or denies it.
        auth: The tool's auth strategy: ``hs.token_auth(get_token)`` or
            ``hs.oauth_auth(...)``; the tool reads its token with ``await ctx.get_token()``.
        max_result_bytes: The most bytes of a result the model reads; a larger one is cut
            with a notice (the app still gets all of it). Default: the run's
            ``max_tool_result_bytes``.
    """

    def build(f: ExecuteFn | None) -> Tool:
        tool_name = name or (f.__name__ if f is not None else None)
        if not tool_name:
            raise TypeError("tool() needs name= when it has no function to take it from")
        schema = input_schema
        if isinstance(schema, Mapping):
            schema = json_schema_model(schema, name=tool_name)
        run = f
        if f is not None and schema is None:
            schema, run = _signature_tool(f)
        elif f is not None:
            run = _body(f, schema)
        if schema is None:
            raise TypeError("tool() needs input_schema= when it has no function to read it from")
        desc = description
        if desc is None:
            desc = inspect.getdoc(f) or "" if f is not None else ""
        return Tool(
            name=tool_name,
            description=desc,
            input_schema=schema,
            context_schema=context_schema,
            execute=run,
            needs_approval=needs_approval,
            auth=auth,
            max_result_bytes=max_result_bytes,
        )

    if fn is not None:
        return build(fn)
    if execute is not None or (input_schema is not None and name is not None):
        # A client tool when there is no execute; still usable as a decorator (Tool.__call__).
        return build(execute)
    return build


def _body(f: ExecuteFn, schema: type[BaseModel] | None = None) -> ExecuteFn:
    """``f`` as ``execute(input, ctx)``: a one-argument function does not get the context; the
    function of a JSON-schema tool gets the validated arguments as the dict they are."""
    body: ExecuteFn = f
    if len(inspect.signature(f).parameters) <= 1:
        body = lambda input, ctx: f(input)  # noqa: E731
    if schema is not None and issubclass(schema, JsonSchemaInput):
        return lambda input, ctx: body(input.root, ctx)
    return body


def finish_tool(schema: type[BaseModel]) -> Tool:
    """The ``__finish__`` tool of a structured answer: its input is the answer (``schema``);
    its output is the answer as JSON (what the log keeps; the loop returns the instance).

    Example::

        from pydantic import BaseModel

        class City(BaseModel):
            name: str

        finish = finish_tool(City)                 # what output=City offers the model
        assert finish.name == "__finish__"
    """
    return Tool(
        name=FINISH_TOOL_NAME,
        description="Call this once, with the final answer, to finish.",
        input_schema=schema,
        execute=lambda output, ctx: output.model_dump(mode="json"),
    )


def tools_by_name(tools: Sequence[Tool] | Mapping[str, Tool] | None) -> dict[str, Tool]:
    """Normalize ``tools=`` (a list or a ``{name: Tool}`` dict) to a dict by name.

    Example::

        assert list(tools_by_name([get_weather])) == ["get_weather"]
        assert tools_by_name({"weather": get_weather})["weather"].name == "weather"   # its key
    """
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        out: dict[str, Tool] = {}
        for key, t in tools.items():
            if not isinstance(t, Tool):
                raise TypeError(f"tools[{key!r}] is not a Tool; define it with hs.tool()")
            out[key] = t if t.name == key else replace(t, name=key)
        return out
    result: dict[str, Tool] = {}
    for t in tools:
        if not isinstance(t, Tool):
            raise TypeError(f"{t!r} is not a Tool; define it with hs.tool()")
        if t.name in result:
            raise ValueError(f"two tools are named {t.name!r}")
        result[t.name] = t
    return result


def resolve_contexts(tools: Mapping[str, Tool], tools_context: Any) -> dict[str, Any]:
    """Each tool's validated, frozen context (raises ToolContextError naming the tool).

    Example::

        contexts = resolve_contexts({"get_weather": get_weather}, {})   # no context_schema: None
        assert contexts == {"get_weather": None}
    """
    return {name: t.resolve_context(tools_context) for name, t in tools.items()}


def dump_output(output: Any) -> str:
    """A tool result as the tool message's content: strings as they are, the rest as JSON.

    Example::

        assert dump_output("plain text") == "plain text"
        assert dump_output({"temperature": 21}) == '{"temperature": 21}'
    """
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(output, ensure_ascii=False, default=str)
