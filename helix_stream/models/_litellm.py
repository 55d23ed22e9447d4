"""The one module that imports litellm (lazily: importing it takes seconds).

It calls ``litellm.acompletion`` (or a ``litellm.Router``'s), registers the embedded demo
provider, and translates litellm's exceptions into the package's error tree (with the table
of cases in ``_translate.py``) — the only place where that happens. It also holds what the
rest of the package needs to know of litellm's knobs: how to switch its own retries off, which
params are litellm's own, and whether a model takes a JSON-schema ``response_format``.

Importing litellm takes seconds of CPU. A server imports it at startup (:func:`load_litellm`;
``create_app`` and ``helix-stream serve`` do it for you), which is also the only place where
the package changes litellm's global settings (README, "Performance"). A run imports it before
its spans and clocks start (:func:`ensure_litellm`), in a worker thread, so the event loop keeps
serving other connections; only a process serving requests (:func:`expect_requests`) warns
that it was not loaded at startup.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
import warnings
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..telemetry._filters import credential_strings
from ._lean_stream import lighten_stream
from ._pool import apply_pool
from ._translate import translate

__all__ = [
    "NO_INNER_RETRIES",
    "ProviderInfo",
    "acompletion",
    "count_tokens",
    "ensure_litellm",
    "expect_requests",
    "is_litellm_param",
    "litellm_module",
    "llm_provider",
    "load_litellm",
    "response_to_stream",
    "router_credentials",
    "supports_response_schema",
    "translate_error",
]

logger = logging.getLogger("helix_stream.models")

_litellm: ModuleType | None = None
_lock = threading.Lock()
_frozen = False
_serving = False  # this process serves requests (expect_requests): a late import is a fault


def litellm_module() -> ModuleType:
    """Import litellm on first use and register the embedded demo provider.

    It changes none of litellm's global settings: that is the server's (:func:`load_litellm`).
    """
    global _litellm
    if _litellm is None:
        with _lock:  # the import may run in a worker thread (see ensure_litellm)
            if _litellm is None:
                if "litellm" not in sys.modules:
                    # Without a local cost map litellm fetches one over the network at import.
                    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                import litellm

                from .demo import register_demo

                register_demo(litellm)
                _litellm = litellm
    return _litellm


def _configure_for_serving(litellm: ModuleType) -> None:
    """The global litellm settings a server changes (README, "Performance")."""
    # litellm prints a "Give Feedback / Get Help" banner for every failed call.
    setattr(litellm, "suppress_debug_info", True)  # noqa: B010 - a ModuleType here
    apply_pool(litellm)  # sized for the server, not litellm's 500 per host


def expect_requests() -> None:
    """Mark this process as one that serves requests (the chat routes call it when built).

    From then on, a model call that finds litellm not loaded yet logs a warning (the import
    holds up that request, and the event loop's other work, for seconds) and gives litellm the
    server's settings. A script is never warned. When litellm is loaded already (the strict
    keyword check of an ``Agent(settings=...)`` reads litellm's parameter lists), it gets the
    server's settings now.
    """
    global _serving
    _serving = True
    if _litellm is not None:
        _configure_for_serving(_litellm)


def load_litellm() -> None:
    """Import litellm now, at startup, rather than while the first request waits.

    Call it once when your app starts if you mount :func:`helix_stream.server.routes` in
    your own app (``create_app`` and ``helix-stream serve`` already do). Idempotent.

    It also takes what exists by then out of the garbage collector's way (``gc.collect()``,
    then ``gc.freeze()``): litellm's import leaves about 380,000 objects, which every full
    collection would otherwise walk — a pause of about 190 ms of the event loop each time,
    several times a minute under load. They live as long as the process anyway.

    Example::

        from helix_stream.models import load_litellm

        load_litellm()
    """
    global _frozen
    _configure_for_serving(litellm_module())
    if not _frozen:
        gc.collect()
        gc.freeze()
        _frozen = True


async def ensure_litellm() -> None:
    """Import litellm now if it is not loaded yet (off the event loop, as a model call does).

    A run calls it before its spans and clocks start, so that the seconds of the import are
    in no model call's span or time to first chunk.
    """
    await _loaded()


async def _loaded() -> ModuleType:
    if _litellm is not None:
        return _litellm
    if "litellm" in sys.modules:  # the app imported it itself: only the demo provider is left
        return litellm_module()
    if not _serving:  # a script: the import is the run's own business
        return await asyncio.to_thread(litellm_module)
    # A server that did not load it at startup: import it off the event loop, so that other
    # connections are not blocked for the seconds the import takes.
    logger.warning(
        "litellm was not loaded at startup; importing it now, during a request. "
        "Call helix_stream.models.load_litellm() when your app starts."
    )
    litellm = await asyncio.to_thread(litellm_module)
    _configure_for_serving(litellm)
    return litellm


# What switches litellm's own retries off, so that one policy (``max_retries`` of the loop)
# decides how often a call is made, on every path:
# - ``num_retries=0``: litellm's wrapper retries (``litellm.num_retries``, a ``retry_policy``) and,
#   with a Router, the Router's own retries (it defaults to retrying; a call's ``num_retries``
#   overrides the Router's setting);
# - ``max_retries=0``: the OpenAI/Azure SDK client under litellm, which otherwise retries a 429
#   or a 5xx twice by itself (a Router already passes 0 to its deployments).
NO_INNER_RETRIES: dict[str, int] = {"num_retries": 0, "max_retries": 0}


async def acompletion(*, router: Any = None, direct: bool = False, **params: Any) -> Any:
    """``litellm.acompletion(**params)``, with litellm's errors translated.

    Args:
        router: A ``litellm.Router``: the call is ``router.acompletion(**params)`` instead, so
            that ``model`` names one of its model groups and its fallbacks, load balancing
            and cooldowns apply.
        direct: The caller reads the chunks by attribute only (no model middleware sees
            them), so an OpenAI stream may be read from its body (:mod:`._direct_stream`).
        **params: The call's params.

    A stream is lightened where nothing can tell (:mod:`._lean_stream`).

    Raises:
        ModelError: a subclass per failure (translated; credentials redacted from the text).
        InvalidRequestError: the call failed in this process before reaching the provider
            (an argument that cannot be serialised, ...).
    """
    litellm = await _loaded()
    call = router.acompletion if router is not None else litellm.acompletion
    try:
        response = await call(**params)
    except Exception as exc:
        secrets = credential_strings(params)
        if router is not None:
            secrets |= router_credentials(router)
        raise translate_error(exc, secrets=secrets) from exc
    if not params.get("stream") or router is not None:  # a Router keeps its own bookkeeping
        return response
    return lighten_stream(litellm, response, params, direct=direct)


def _deployments(router: Any) -> list[Mapping[str, Any]]:
    """A Router's deployments (``model_name``, ``litellm_params``, ``model_info`` each)."""
    with warnings.catch_warnings():
        # Newer litellm versions deprecate ``model_list`` for ``registry().all()``.
        warnings.simplefilter("ignore", DeprecationWarning)
        registry = getattr(router, "registry", None)
        try:
            entries = registry().all() if callable(registry) else getattr(router, "model_list", ())
        except Exception:  # an unexpected Router shape: no deployments known
            return []
    return [e for e in entries or () if isinstance(e, Mapping)]


def router_credentials(router: Any) -> set[str]:
    """The credential strings of a Router's deployments (their ``litellm_params``)."""
    out: set[str] = set()
    for entry in _deployments(router):
        params = entry.get("litellm_params")
        if isinstance(params, Mapping):
            out |= credential_strings(params)
    return out


def translate_error(exc: BaseException, *, secrets: set[str] | None = None) -> BaseException:
    """Map a litellm (or openai/httpx) exception to a :class:`~helix_stream.errors.ModelError`.

    The result is also an instance of the litellm exception's class (``_translate.py``), so
    that a user's ``except litellm.RateLimitError:`` keeps working; every timeout, helix's own
    ``timeout=`` limits included, is also a ``litellm.Timeout``. Our other errors, and anything
    that is not an exception of the model call, pass unchanged. A litellm error that wraps a
    ``TypeError`` raised in this process (litellm reports "Object of type ... is not JSON
    serializable" as a provider 500) becomes a non-retryable
    :class:`~helix_stream.errors.InvalidRequestError`: it is a programming error, and retrying
    it would only repeat it.

    Where to add a case: a provider exception shape that needs its own target goes into
    ``_error_table`` (by litellm class) or ``_by_status`` (by HTTP status) of
    ``models/_translate.py``; the combining with litellm's class applies to every case.

    Args:
        exc: The exception.
        secrets: Strings to redact from the message (the call's credentials: a provider may
            echo the API key it refused).
    """
    if _litellm is None:
        return exc
    return translate(exc, _litellm.exceptions, secrets=secrets)


def supports_response_schema(model: str, router: Any = None) -> bool:
    """Whether ``model`` takes a JSON-schema ``response_format``, as litellm's model map says.

    With a Router, ``model`` is a model group: true only if every deployment of the group
    supports it (any of them may answer). Unknown models are ``False``. Needs litellm loaded.
    """
    litellm = litellm_module()
    if router is None:
        return bool(litellm.supports_response_schema(model=model))
    models = _group_models(router, model)
    return bool(models) and all(litellm.supports_response_schema(model=m) for m in models)


def _group_models(router: Any, group: str) -> list[str]:
    out: list[str] = []
    for entry in _deployments(router):
        params = entry.get("litellm_params")
        if entry.get("model_name") == group and isinstance(params, Mapping):
            model = params.get("model")
            if isinstance(model, str):
                out.append(model)
    return out


def is_litellm_param(name: str) -> bool:
    """Whether litellm consumes ``name`` itself rather than sending it to the provider
    (``api_key``, ``metadata``, ``timeout``, ...). Needs litellm loaded."""
    litellm = litellm_module()
    owned = getattr(litellm.types.utils, "is_litellm_owned_kwarg", None)
    if callable(owned):
        return bool(owned(name))
    return name in getattr(litellm.types.utils, "all_litellm_params", ())


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


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """Where litellm sends a model string (see :func:`llm_provider`)."""

    model: str
    provider: str
    bedrock_route: str | None
    openai_compatible: frozenset[str]


def llm_provider(
    model: str, *, custom_llm_provider: str | None = None, api_base: str | None = None
) -> ProviderInfo | None:
    """litellm's provider for ``model`` (``get_llm_provider``), its Bedrock route, and the
    providers litellm sends in the OpenAI format as it is; ``None`` if litellm cannot place it."""
    litellm = litellm_module()
    try:
        name, provider, _, _ = litellm.get_llm_provider(
            model=model, custom_llm_provider=custom_llm_provider, api_base=api_base
        )
    except Exception:
        return None
    route = None
    if provider == "bedrock":
        from litellm.llms.bedrock.common_utils import BedrockModelInfo

        route = BedrockModelInfo.get_bedrock_route(name)
    custom = {entry["provider"] for entry in litellm.custom_provider_map}
    return ProviderInfo(
        model=name,
        provider=provider,
        bedrock_route=route,
        openai_compatible=frozenset(litellm.openai_compatible_providers) | custom,
    )


def count_tokens(params: Mapping[str, Any]) -> int:
    """The input tokens of a request (``litellm.acompletion`` params: ``model``,
    ``messages``, ``tools``), as litellm's token counter counts them (its tokenizer for the
    model, tiktoken's by default). Needs litellm loaded (a run has loaded it)."""
    litellm = litellm_module()
    return int(
        litellm.token_counter(
            model=str(params.get("model", "")),
            messages=list(params.get("messages") or []),
            tools=list(params.get("tools") or []) or None,
            # An image by URL is counted at litellm's default size, never fetched to measure.
            use_default_image_token_count=True,
        )
    )
