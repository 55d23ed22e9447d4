"""The one module that imports litellm (lazily: importing it takes seconds).

It calls ``litellm.acompletion``, registers the embedded demo provider, and translates
litellm's exceptions into the package's error tree — the only place where that happens.

Importing litellm takes seconds of CPU. A server imports it at startup (:func:`load_litellm`;
``create_app`` and ``helix-stream serve`` do it for you). If a model call finds it not loaded
yet, it is imported in a worker thread, so the event loop keeps serving other connections.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from .. import errors
from ._lean_stream import lighten_stream

__all__ = [
    "acompletion",
    "litellm_module",
    "load_litellm",
    "response_to_stream",
    "translate_error",
]

logger = logging.getLogger("helix_stream.models")

_litellm: ModuleType | None = None
_lock = threading.Lock()


def litellm_module() -> ModuleType:
    """Import litellm on first use and register the embedded demo provider."""
    global _litellm
    if _litellm is None:
        with _lock:  # the import may run in a worker thread (see acompletion)
            if _litellm is None:
                # Without a local cost map litellm fetches one over the network at import.
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                from .demo import register_demo

                register_demo(litellm)
                _litellm = litellm
    return _litellm


def load_litellm() -> None:
    """Import litellm now, at startup, rather than while the first request waits.

    Call it once when your app starts if you mount :func:`helix_stream.server.routes` in
    your own app (``create_app`` and ``helix-stream serve`` already do). Idempotent.

    Example::

        from helix_stream.models import load_litellm

        load_litellm()
    """
    litellm_module()


async def _loaded() -> ModuleType:
    if _litellm is not None:
        return _litellm
    # Not loaded at startup: import it off the event loop, so that other connections are
    # not blocked for the seconds the import takes.
    logger.warning(
        "litellm was not loaded at startup; importing it now, during a request. "
        "Call helix_stream.models.load_litellm() when your app starts."
    )
    return await asyncio.to_thread(litellm_module)


async def acompletion(**params: Any) -> Any:
    """``litellm.acompletion(**params)``, with litellm's errors translated.

    A stream is lightened where nothing can tell (:mod:`._lean_stream`).
    """
    litellm = await _loaded()
    try:
        response = await litellm.acompletion(**params)
    except Exception as exc:
        raise translate_error(exc) from exc
    return lighten_stream(litellm, response, params) if params.get("stream") else response


def translate_error(exc: BaseException) -> BaseException:
    """Map a litellm (or openai/httpx) exception to a :class:`~helix_stream.errors.ModelError`.

    Our own errors, and anything that is not an exception of the model call, pass unchanged.
    """
    if isinstance(exc, errors.HelixError) or _litellm is None:
        return exc
    lx = _litellm.exceptions
    message = f"{type(exc).__name__}: {getattr(exc, 'message', None) or exc}"
    table: list[tuple[tuple[type[BaseException], ...], type[errors.ModelError]]] = [
        ((lx.AuthenticationError, lx.PermissionDeniedError), errors.ModelAuthError),
        ((lx.RateLimitError,), errors.ModelRateLimitError),
        ((lx.Timeout,), errors.ModelTimeoutError),
        (
            (lx.ServiceUnavailableError, lx.InternalServerError, lx.APIConnectionError),
            errors.ModelUnavailableError,
        ),
        (
            (
                lx.BadRequestError,
                lx.NotFoundError,
                lx.UnprocessableEntityError,
                lx.ContextWindowExceededError,
            ),
            errors.ModelBadRequestError,
        ),
        ((lx.APIError, lx.OpenAIError), errors.ModelError),
    ]
    for types, target in table:
        if isinstance(exc, types):
            return target(message)
    return exc


async def response_to_stream(response: Any) -> AsyncIterator[Any]:
    """Replay a non-streaming ``ModelResponse`` as litellm stream chunks (for
    :func:`~helix_stream.simulate_streaming`)."""
    from litellm.types.utils import (
        ChatCompletionDeltaToolCall,
        Delta,
        Function,
        ModelResponseStream,
        StreamingChoices,
    )

    choice = response.choices[0]
    message = choice.message
    base = {"id": response.id, "model": response.model, "created": response.created}
    if getattr(message, "reasoning_content", None):
        yield ModelResponseStream(
            **base,
            choices=[
                StreamingChoices(index=0, delta=Delta(reasoning_content=message.reasoning_content))
            ],
        )
    if message.content:
        yield ModelResponseStream(
            **base, choices=[StreamingChoices(index=0, delta=Delta(content=message.content))]
        )
    for i, call in enumerate(message.tool_calls or []):
        delta_call = ChatCompletionDeltaToolCall(
            id=call.id,
            type="function",
            index=i,
            function=Function(name=call.function.name, arguments=call.function.arguments),
        )
        yield ModelResponseStream(
            **base, choices=[StreamingChoices(index=0, delta=Delta(tool_calls=[delta_call]))]
        )
    last = ModelResponseStream(
        **base,
        choices=[StreamingChoices(index=0, delta=Delta(), finish_reason=choice.finish_reason)],
    )
    usage = getattr(response, "usage", None)
    if usage is not None:
        last.usage = usage
    yield last
