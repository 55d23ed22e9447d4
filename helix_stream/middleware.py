"""Model middleware: wrappers around the litellm call (``wrap_model``, ``wrap_acompletion``).

As the AI SDK's ``wrapLanguageModel``: ``transform_params``, ``wrap_generate`` and
``wrap_stream``, each a no-op by default. The first middleware in a list is the outermost: it
transforms the params first and its wrap sees the others' result. Step middleware (the
``prepare_step`` chain, which runs before each model call of the loop) is
:mod:`helix_stream.prepare_step`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ModelMiddleware",
    "WrappedModel",
    "call_with_middleware",
    "default_settings",
    "simulate_streaming",
    "wrap_acompletion",
    "wrap_completion",
    "wrap_model",
]

Params = dict[str, Any]
DoGenerate = Callable[[Params], Awaitable[Any]]
DoStream = Callable[[Params], Awaitable[AsyncIterator[Any]]]


class ModelMiddleware:
    """Base class for model middleware; override any of the three hooks.

    Example::

        from typing import Any

        class LogParams(hs.ModelMiddleware):
            async def transform_params(
                self, params: dict[str, Any], *, stream: bool
            ) -> dict[str, Any]:
                print(params["model"])
                return params
    """

    async def transform_params(self, params: Params, *, stream: bool) -> Params:
        """Return the params to call the model with (``stream`` says which call it is)."""
        return params

    async def wrap_generate(
        self, *, do_generate: DoGenerate, do_stream: DoStream, params: Params
    ) -> Any:
        """Wrap a non-streaming call; ``await do_generate(params)`` calls the next layer."""
        return await do_generate(params)

    async def wrap_stream(
        self, *, do_generate: DoGenerate, do_stream: DoStream, params: Params
    ) -> AsyncIterator[Any]:
        """Wrap a streaming call; ``await do_stream(params)`` returns the next layer's stream."""
        return await do_stream(params)


@dataclass(frozen=True, slots=True)
class WrappedModel:
    """A model string with middleware around it (see :func:`wrap_model`).

    Example::

        model: hs.WrappedModel = hs.wrap_model("helix/demo", [hs.default_settings(temperature=0)])
        result = hs.stream_text(model=model, prompt="Hi")     # the middleware runs around each call
    """

    model: str
    middleware: tuple[ModelMiddleware, ...] = ()

    def __str__(self) -> str:
        return self.model


def wrap_model(model: str | WrappedModel, middleware: Sequence[ModelMiddleware]) -> WrappedModel:
    """Wrap a model with middleware, for this package's own model arguments.

    The result goes where helix_stream takes a model: ``stream_text(model=...)``,
    ``generate_text(model=...)``, ``Agent(model=...)`` and a ``prepare_step`` override's
    ``"model"``; the middleware then runs around each of that model's calls. It is not a
    litellm model: ``litellm.acompletion(model=wrapped)`` fails (``str(wrapped)`` is the bare
    model string, without the middleware). To put middleware around your own litellm calls,
    use :func:`wrap_acompletion`.

    Args:
        model: A litellm model string (with ``router=``, a Router's model group), or an
            already wrapped model (its middleware stays innermost).
        middleware: The first is the outermost.

    Example::

        model = hs.wrap_model("openai/gpt-4o-mini", [hs.default_settings(temperature=0.2)])
        agent = hs.Agent(name="support", model=model)
    """
    if isinstance(model, WrappedModel):
        return WrappedModel(model.model, (*middleware, *model.middleware))
    return WrappedModel(model, tuple(middleware))


async def call_with_middleware(
    acompletion: Callable[..., Awaitable[Any]],
    middleware: Sequence[ModelMiddleware],
    params: Params,
) -> Any:
    """Call ``acompletion(**params)`` through the middleware; streaming iff ``params["stream"]``.

    Example::

        import litellm

        response = await call_with_middleware(
            litellm.acompletion, [hs.default_settings(temperature=0)],
            {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
        )
    """
    stream = bool(params.get("stream"))
    for m in middleware:
        params = await m.transform_params(dict(params), stream=stream)

    async def base_generate(p: Params) -> Any:
        return await acompletion(**{**p, "stream": False})

    async def base_stream(p: Params) -> AsyncIterator[Any]:
        result: AsyncIterator[Any] = await acompletion(**{**p, "stream": True})
        return result

    do_generate: DoGenerate = base_generate
    do_stream: DoStream = base_stream
    # Build from the inside out so that middleware[0] ends up outermost.
    for m in reversed(middleware):
        do_generate, do_stream = _layer(m, do_generate, do_stream)
    return await (do_stream(params) if stream else do_generate(params))


def _layer(
    m: ModelMiddleware, inner_gen: DoGenerate, inner_stream: DoStream
) -> tuple[DoGenerate, DoStream]:
    async def gen(p: Params) -> Any:
        return await m.wrap_generate(do_generate=inner_gen, do_stream=inner_stream, params=p)

    async def stream(p: Params) -> AsyncIterator[Any]:
        return await m.wrap_stream(do_generate=inner_gen, do_stream=inner_stream, params=p)

    return gen, stream


def wrap_acompletion(
    acompletion: Callable[..., Awaitable[Any]], middleware: Sequence[ModelMiddleware]
) -> Callable[..., Awaitable[Any]]:
    """A drop-in for ``litellm.acompletion`` with middleware around every call.

    Example::

        acompletion = hs.wrap_acompletion(litellm.acompletion, [hs.default_settings(temperature=0)])
        stream = await acompletion(model="openai/gpt-4o-mini", messages=msgs, stream=True)

    Raises:
        TypeError: ``acompletion`` is a sync function (``litellm.completion``): here, at wrap
            time, not at the first call; use :func:`wrap_completion` for it.
    """
    if not inspect.iscoroutinefunction(acompletion) and _is_sync_litellm(acompletion):
        raise TypeError(
            f"wrap_acompletion() takes litellm's async acompletion; "
            f"{getattr(acompletion, '__name__', acompletion)!r} is a sync function. Use "
            "hs.wrap_completion(litellm.completion, middleware) for the sync drop-in."
        )
    chain = tuple(middleware)

    async def wrapped(model: str | None = None, messages: Any = None, **kwargs: Any) -> Any:
        params: Params = dict(kwargs)
        if model is not None:
            params["model"] = model
        if messages is not None:
            params["messages"] = messages
        return await call_with_middleware(acompletion, chain, params)

    wrapped.__doc__ = getattr(acompletion, "__doc__", None)
    return wrapped


def _is_sync_litellm(fn: object) -> bool:
    """A sync function of litellm's (``completion``): never an awaitable's maker. A sync
    callable of the user's may return an awaitable, and is taken on trust."""
    module = getattr(fn, "__module__", "") or ""
    return module.split(".")[0] == "litellm"


def wrap_completion(
    completion: Callable[..., Any], middleware: Sequence[ModelMiddleware]
) -> Callable[..., Any]:
    """A drop-in for the sync ``litellm.completion`` with middleware around every call.

    For code without an event loop; the middleware (async, as for
    :func:`wrap_acompletion`) runs on the package's sync bridge, and a stream comes back as
    an iterator of litellm's chunks.

    Example::

        completion = hs.wrap_completion(litellm.completion, [hs.default_settings(temperature=0)])
        response = completion(model="openai/gpt-4o-mini", messages=msgs)

    Raises:
        TypeError: ``completion`` is an async function (``litellm.acompletion``): use
            :func:`wrap_acompletion` for it. Raised here, at wrap time.
        RuntimeError: (at a call) called where an event loop is running: use the async
            drop-in there.
    """
    if inspect.iscoroutinefunction(completion):
        raise TypeError(
            "wrap_completion() takes litellm's sync completion; "
            f"{getattr(completion, '__name__', completion)!r} is async. Use "
            "hs.wrap_acompletion(litellm.acompletion, middleware) for the async drop-in."
        )
    chain = tuple(middleware)

    async def through_thread(**params: Any) -> Any:
        response = await asyncio.to_thread(completion, **params)
        return _async_chunks(response) if params.get("stream") else response

    def wrapped(model: str | None = None, messages: Any = None, **kwargs: Any) -> Any:
        from ._sync import run_sync, sync_iterator

        params: Params = dict(kwargs)
        if model is not None:
            params["model"] = model
        if messages is not None:
            params["messages"] = messages
        form = "await hs.wrap_acompletion(litellm.acompletion, ...)(...)"
        out = run_sync("wrap_completion", form, call_with_middleware(through_thread, chain, params))
        return sync_iterator("wrap_completion", form, out) if params.get("stream") else out

    wrapped.__doc__ = getattr(completion, "__doc__", None)
    return wrapped


async def _async_chunks(stream: Any) -> AsyncIterator[Any]:
    """A sync stream (litellm's ``CustomStreamWrapper``) read off the loop, chunk by chunk."""
    iterator = iter(stream)
    done = object()
    while (chunk := await asyncio.to_thread(next, iterator, done)) is not done:
        yield chunk


class _DefaultSettings(ModelMiddleware):
    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = dict(settings)

    async def transform_params(self, params: Params, *, stream: bool) -> Params:
        merged = dict(self.settings)
        for key, value in params.items():
            # Explicit call params win; dict-valued settings merge one level deep.
            if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value
        return merged


def default_settings(**settings: Any) -> ModelMiddleware:
    """Middleware that supplies default litellm params; explicit call params win.

    Example::

        model = hs.wrap_model("openai/gpt-4o", [hs.default_settings(temperature=0.2)])
    """
    return _DefaultSettings(settings)


class _SimulateStreaming(ModelMiddleware):
    async def wrap_stream(
        self, *, do_generate: DoGenerate, do_stream: DoStream, params: Params
    ) -> AsyncIterator[Any]:
        from .models._litellm import response_to_stream

        response = await do_generate(params)
        return response_to_stream(response)


def simulate_streaming() -> ModelMiddleware:
    """Middleware for models that cannot stream: makes a non-streaming call and replays its
    result as a stream (the AI SDK's ``simulateStreamingMiddleware``).

    Example::

        model = hs.wrap_model("helix/demo", [hs.simulate_streaming()])   # one call, replayed
        result = hs.stream_text(model=model, prompt="Hi")
    """
    return _SimulateStreaming()
