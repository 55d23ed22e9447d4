"""``hs.tool()``: a tool from a function (its input model read from the signature) or from
options, directly or as a decorator; its overloads keep the function's types."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, get_origin, overload

from pydantic import BaseModel, create_model

from .._json_schema import json_schema_model
from .._tool_context import ContextT, ToolContext
from ._tool import DescriptionFn, ExecuteFn, InputT, OutputT, Tool, _body

if TYPE_CHECKING:
    from .._auth_strategy import AuthStrategy


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
    side_effects: bool = False,
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
    side_effects: bool = False,
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
    side_effects: bool = False,
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
    side_effects: bool = False,
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
    side_effects: bool = False,
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
        side_effects: The tool acts on the world (an email, a payment, a ticket): each call
            is recorded in the session's ledger before it runs and its result after; a call
            a crash left in flight is not run again (docs/guides/sessions.md, "Tools with
            side effects"). Give ``ctx.idempotency_key`` to the API it calls.
    """

    def build(f: ExecuteFn | None) -> Tool:
        return _build(
            f,
            name=name,
            description=description,
            input_schema=input_schema,
            context_schema=context_schema,
            needs_approval=needs_approval,
            auth=auth,
            max_result_bytes=max_result_bytes,
            side_effects=side_effects,
        )

    if fn is not None:
        return build(fn)
    if execute is not None or (input_schema is not None and name is not None):
        # A client tool when there is no execute; still usable as a decorator (Tool.__call__).
        return build(execute)
    return build


def _build(
    f: ExecuteFn | None,
    *,
    name: str | None,
    description: str | DescriptionFn | None,
    input_schema: type[BaseModel] | Mapping[str, Any] | None,
    context_schema: type[Any] | None,
    needs_approval: bool,
    auth: AuthStrategy | None,
    max_result_bytes: int | None,
    side_effects: bool,
) -> Tool:
    """The tool ``tool()`` defines, with ``f`` (or ``None``: a client tool) as its body."""
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
        side_effects=side_effects,
    )
