"""The one module that imports litellm (lazily: importing it takes seconds).

It calls ``litellm.acompletion``, registers the embedded demo provider on first use of a
``helix/...`` model, and translates litellm's exceptions into the package's error tree — the
only place where that happens.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from .. import errors

__all__ = ["acompletion", "litellm_module", "response_to_stream", "translate_error"]

_litellm: ModuleType | None = None


def litellm_module() -> ModuleType:
    """Import litellm on first use and register the embedded demo provider."""
    global _litellm
    if _litellm is None:
        # Without a local cost map litellm fetches one over the network at import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        from .demo import register_demo

        register_demo(litellm)
        _litellm = litellm
    return _litellm


async def acompletion(**params: Any) -> Any:
    """``litellm.acompletion(**params)``, with litellm's errors translated."""
    litellm = litellm_module()
    try:
        return await litellm.acompletion(**params)
    except Exception as exc:
        raise translate_error(exc) from exc


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
