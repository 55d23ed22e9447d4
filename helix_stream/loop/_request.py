"""A model call's request: its ``litellm.acompletion`` params and its prompt caching.

This module owns :func:`model_name` (the litellm model string and a wrapped model's own
middleware), :func:`request_params` (the params of a step, from the config and the step's
overrides) and :func:`cache_scope` (the call's prompt caching, what ``ttl="auto"`` decides
with) and :func:`prepared_call` (a step ready to call the model: its request, middleware,
prompt caching and own time limits, the overrides checked before the call). The call itself
is :class:`~helix_stream.loop._step.ModelCall`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._timeout import as_timeout
from ..middleware import ModelMiddleware, WrappedModel
from ..models._cache import CacheHints, PromptCacheOption, check_prompt_cache
from ..models._cache_book import CacheBook, CacheScope
from ..models._output import OutputSpec
from ..prepare_step import STEP_OVERRIDE_KEYS, StepInput
from ..tools import Tool
from ._config import LoopConfig
from ._env import StepCommit
from ._params import check_known

__all__ = ["Prepared", "cache_scope", "model_name", "prepared_call", "request_params"]


def model_name(model: str | WrappedModel) -> tuple[str, tuple[ModelMiddleware, ...]]:
    """The litellm model string and the model's own middleware."""
    if isinstance(model, WrappedModel):
        return model.model, model.middleware
    return str(model), ()


def request_params(
    cfg: LoopConfig,
    step: StepInput,
    overrides: Mapping[str, Any],
    contexts: Mapping[str, Any],
    *,
    forced: bool,
    output: OutputSpec | None = None,
) -> dict[str, Any]:
    """The ``litellm.acompletion`` params of one model call (``output``: a structured answer
    asked for through the provider's JSON schema, which replaces the finish tool)."""
    system = overrides.get("system", cfg.system)
    active = overrides.get("active_tools")
    hidden = cfg.finish_tool if output is not None and output.mode == "json_schema" else None
    offered: Sequence[Tool] = [
        t for name, t in cfg.tools.items() if (active is None or name in active) and name != hidden
    ]
    params: dict[str, Any] = {**cfg.litellm_params}
    # Litellm params from prepare_step apply to this call only; a name litellm does not know
    # is refused as the run's error (TypeError), before the call.
    extra = {k: v for k, v in overrides.items() if k not in STEP_OVERRIDE_KEYS}
    check_known(extra, where="a prepare_step override", model=model_name(step.model)[0])
    params.update(extra)
    params["model"] = model_name(step.model)[0]
    params["messages"] = ([{"role": "system", "content": system}] if system else []) + step.messages
    params["stream"] = True
    params.setdefault("stream_options", {"include_usage": True})
    if offered:
        params["tools"] = [t.schema(contexts[t.name]) for t in offered]
    if "tool_choice" in overrides:
        params["tool_choice"] = overrides["tool_choice"]
    if output is not None:
        params.update(output.request_params())
    if forced and hidden is None:
        # Forced completion: the model must call the finish tool now.
        params["tool_choice"] = {"type": "function", "function": {"name": cfg.finish_tool}}
    elif forced and offered:
        # Forced completion of a JSON-schema answer: no more tool calls, the answer now.
        params["tool_choice"] = "none"
    return params


def cache_scope(
    cfg: LoopConfig, step_number: int, params: Mapping[str, Any], mode: PromptCacheOption
) -> CacheScope:
    """A model call's prompt caching: ``mode`` (the step's ``prompt_cache``), the run's ledger
    book (its session's, from the turn environment), and what ``ttl="auto"`` decides with:
    whether the request offers a tool that can park the turn (one that needs an approval, a
    client tool, one with ``auth=``), and whether the session's turns come far apart."""
    book = cfg.env.cache_book or CacheBook()
    offered = {t.get("function", {}).get("name") for t in params.get("tools") or ()}
    tools = cfg.tools
    can_park = any(
        tools[name].pauses_for is not None or tools[name].auth is not None
        for name in offered
        if name in tools
    )
    slow = book.slow(cfg.session_id, first_of_turn=step_number == 0)
    hints = CacheHints(can_park=can_park, slow=slow)
    return CacheScope(book=book, session_id=cfg.session_id, mode=mode, hints=hints)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A step ready to call the model."""

    context: StepCommit
    step: StepInput
    params: dict[str, Any]
    middleware: tuple[ModelMiddleware, ...]
    prompt_cache: PromptCacheOption
    timeout: Any = None  # the step's own limits (a prepare_step override)


def prepared_call(
    cfg: LoopConfig,
    context: StepCommit,
    step: StepInput,
    overrides: Mapping[str, Any],
    params: dict[str, Any],
) -> Prepared:
    """Step ``step`` ready to call the model, with ``params`` (:func:`request_params`);
    a bad ``prompt_cache`` or ``timeout`` override fails here, before the call."""
    middleware = (*cfg.middleware, *model_name(step.model)[1])
    prompt_cache = overrides.get("prompt_cache", cfg.prompt_cache)
    check_prompt_cache(prompt_cache)  # a bad override fails before the call
    timeout = overrides.get("timeout")
    as_timeout(timeout)  # a bad override fails before the call too
    return Prepared(
        context=context,
        step=step,
        params=params,
        middleware=middleware,
        prompt_cache=prompt_cache,
        timeout=timeout,
    )
