"""The chat server's options are declared once (``ServerOptions``) and shared by ``routes``,
``create_app`` and ``fastapi_router``: typed keywords, one value, the same docs."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, ForwardRef

import pytest

import helix_stream as hs
from helix_stream.server import ServerKeywords, ServerOptions, create_app, fastapi_router, routes

_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "routes": routes,
    "create_app": create_app,
    "fastapi_router": fastapi_router,
}


def _annotation(value: Any) -> str:
    return value.__forward_arg__ if isinstance(value, ForwardRef) else str(value)


def test_the_keyword_form_mirrors_server_options() -> None:
    declared = {f.name: str(f.type) for f in dataclasses.fields(ServerOptions)}
    keywords = {name: _annotation(t) for name, t in ServerKeywords.__annotations__.items()}
    assert keywords == declared


@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
def test_each_function_takes_the_typed_keywords_and_documents_every_option(name: str) -> None:
    fn = _FUNCTIONS[name]
    parameters = inspect.signature(fn).parameters
    rest = [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert [str(p.annotation) for p in rest] == ["Unpack[ServerKeywords]"]
    assert str(parameters["options"].annotation) == "ServerOptions | None"
    doc = inspect.getdoc(fn) or ""
    args = doc.split("Args:\n", 1)[1]
    for field in dataclasses.fields(ServerOptions):
        assert f"\n    {field.name}: " in args, field.name


@pytest.mark.parametrize("name", sorted(_FUNCTIONS))
def test_an_unknown_server_option_is_refused_naming_the_closest(name: str) -> None:
    with pytest.raises(TypeError, match="did you mean `on_disconnect`"):
        _FUNCTIONS[name](hs.Executor(), hs.Agent(name="a"), on_disconect="cancel")


def test_one_value_and_keywords_serve_alike() -> None:
    # The options as one value, with a keyword over it: the chat answers on the value's path.
    options = ServerOptions(api_path="/chat", client_version=5)
    app = create_app(hs.Executor(), hs.Agent(name="a"), options=options, client_version=7)
    paths = {getattr(route, "path", None) for route in app.routes}
    assert "/chat" in paths and "/api/chat" not in paths
    with pytest.raises(ValueError, match="client_version must be 5, 6 or 7"):
        create_app(hs.Executor(), hs.Agent(name="a"), options=options, client_version=4)
