"""Refuses, before any request, a model-call argument that cannot be sent.

A keyword that ``stream_text``, ``generate_text`` or an ``Agent``'s ``settings`` do not know
travels to litellm, and from there to the provider. Without a check, a misplaced option
(``output_schema=`` on ``stream_text``) or a value that is not JSON comes back from litellm as
a provider "500" — a retryable ``ModelUnavailableError`` — for what is a programming error.
:func:`check_params` says what is wrong and where the keyword belongs, as a non-retryable
:class:`~helix_stream.errors.InvalidRequestError`, and nothing is sent.

Two levels: the names (helix options in the wrong place, litellm's own retry knobs, which the
package's one retry policy replaces) are checked without litellm; the values (what litellm
would put in the request body must be JSON) are checked when litellm is loaded, since only
litellm knows which params it consumes itself (``metadata``, ``timeout``, a ``client``...).

Strict keywords (:func:`check_known`): a name that is neither a helix option nor a parameter
litellm knows is a ``TypeError`` naming the closest known one, and nothing is sent — litellm
would forward it into the provider's request body, where a misspelt ``tool_context=`` would put
a tool's credentials. What litellm knows is read from litellm, at the call: the OpenAI chat
parameters, the call parameters it lists, ``litellm.completion``'s own keywords and those it
reports as supported for the call's model and provider. Provider extras go through the run
option ``provider_options``.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from pydantic import BaseModel

from .._options import OPTION_NAMES
from ..errors import InvalidRequestError

__all__ = ["check_known", "check_params", "litellm_param_names", "unknown_keyword"]

_LOOP = "stream_text()/generate_text()"
_AGENT = "Agent(...)"
_RUN = f"{_LOOP}, {_AGENT} or Executor.run()"

# Keywords of the package (not litellm's) that are not run options, and where each belongs.
# A name that belongs to the place where it was given never reaches this table: that function
# consumed it as an option.
_HELIX_KEYWORDS: dict[str, tuple[str, str]] = {
    # name: (what it is, where it belongs)
    "output_schema": (
        "the structured output of an Agent",
        f"{_AGENT}; stream_text()/generate_text() take output=",
    ),
    "output": ("the structured output of a call", f"{_LOOP}; an Agent takes output_schema="),
    "max_steps": (
        "an Agent's step limit",
        f"{_AGENT}; stream_text()/generate_text() stop with stop_when=hs.step_count_is(n)",
    ),
    "step_context": ("the step_context hook", _AGENT),
    "step_context_limits": ("the step_context hook's limits", _AGENT),
    "hooks": ("define_hook subscribers", _AGENT),
    "memory": ("memory recall", _AGENT),
    "client_tool_timeout": ("the client tool deadline", _AGENT),
    "sandbox": ("an Agent's sandbox provider", _AGENT),
    "skills": ("an Agent's skills", _AGENT),
    "sandbox_on_session": ("the sandbox preparation", _AGENT),
    "settings": ("an Agent's litellm params", f"{_AGENT}; here, pass them as keywords"),
    "prompt": ("the user prompt", _LOOP),
    "system": ("the system prompt", f"{_LOOP} or {_AGENT}"),
}

# What each run option is, for the message (an option without a line here is "a run option");
# where it belongs is the same for all of them (helix_stream/_options.py).
_RUN_OPTIONS: dict[str, str] = {
    "router": "the litellm Router",
    "prompt_cache": "cache breakpoints",
    "tools_context": "per-tool contexts",
    "runtime_context": "the runtime context",
    "prepare_step": "step middleware",
    "stop_when": "stop conditions",
    "telemetry": "telemetry settings",
    "middleware": "model middleware",
    "timeout": "the run's time limits, seconds or hs.Timeout",
    "on_chunk": "a callback",
    "on_step_finish": "a callback",
    "on_finish": "a callback",
    "on_error": "a callback",
}

# Params the loop builds itself (messages, tools) or that litellm consumes and that may hold
# objects (a pydantic class as response_format is litellm's documented form).
_BUILT = frozenset({"model", "messages", "tools", "stream", "stream_options"})


def check_params(
    params: Mapping[str, Any],
    *,
    where: str = "stream_text",
    is_litellm_param: Callable[[str], bool] | None = None,
) -> None:
    """Raise if a model-call argument cannot be sent; return ``None`` if all can.

    Args:
        params: The litellm params of the call: for ``stream_text``, the keywords left after
            its own options were taken; for an Agent, its ``settings``; for ``prepare_step``,
            its litellm overrides (the loop takes its own keys out first); for a step's
            request, the final params (``model``, ``messages``, ``tools`` are the
            loop's and are not checked as values).
        where: Where the params were given, for the message.
        is_litellm_param: litellm's "does it consume this param itself" predicate
            (:func:`helix_stream.models._litellm.is_litellm_param`). Without it, only the
            names are checked (litellm not loaded yet); with it, every param that litellm
            would send to the provider must also be JSON.

    Raises:
        InvalidRequestError: naming the argument, and for a package keyword, where it goes.
            Never retryable.
    """
    for name, value in params.items():
        _check_name(name, value, where)
        _check_class(name, value, where)
    if is_litellm_param is None:
        return
    for name, value in params.items():
        if name in _BUILT or is_litellm_param(name):
            continue
        _check_json(name, value, where)


def _known(name: str) -> tuple[str, str] | None:
    """What a package keyword is and where it belongs; ``None`` for any other name."""
    if name in OPTION_NAMES:
        return _RUN_OPTIONS.get(name, "a run option"), f"{_RUN} as {name}="
    return _HELIX_KEYWORDS.get(name)


def _check_name(name: str, value: Any, where: str) -> None:
    known = _known(name)
    if known is not None:
        what, belongs = known
        raise InvalidRequestError(
            f"{name}= ({what}) is not an argument of {where}: it belongs to {belongs}. "
            "Nothing was sent."
        )
    # litellm's retry knobs: the package retries with one policy and switches these off, so
    # any value here would be silently replaced; refused, with a pointer to the policy.
    if name in ("num_retries", "max_retries"):
        raise InvalidRequestError(
            f"{name}={value!r} (litellm's own retries) is not taken in {where}: helix_stream "
            "retries a model call with one policy, so that attempts do not multiply. Pass "
            f"max_retries= to {_LOOP} or {_AGENT} instead (0: no retries). Nothing was sent."
        )


def _check_class(name: str, value: Any, where: str) -> None:
    """A class is never a request value, except litellm's pydantic ``response_format``."""
    if not isinstance(value, type):
        return
    if name == "response_format" and issubclass(value, BaseModel):
        return
    raise InvalidRequestError(
        f"{name}= was given the class {value.__name__} in {where}; a model call can only send "
        "JSON values. Nothing was sent."
    )


def _check_json(name: str, value: Any, where: str) -> None:
    try:
        json.dumps(value, default=_pydantic_only)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(
            f"{name}= cannot be sent to the model: {exc} (given in {where}). litellm sends "
            "this argument to the provider as JSON. Nothing was sent."
        ) from None


def _pydantic_only(value: Any) -> Any:
    # litellm serialises pydantic objects (message parts, tool definitions) itself.
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# What each known misspelling of a helix option means, beyond the closest name: why it
# matters that it is refused.
_WHY = (
    "helix_stream sends no keyword it does not know (litellm would put it into the "
    "provider's request); provider extras go in provider_options={...}"
)


def check_known(
    params: Mapping[str, Any],
    *,
    where: str,
    model: object = None,
    own: Collection[str] = (),
) -> None:
    """Raise ``TypeError`` for a keyword in ``params`` that litellm does not know.

    Args:
        params: The litellm params (what is left once the run options were taken).
        where: Where they were given (``"stream_text()"``, ``"Agent(settings=...)"``).
        model: The call's model (a string or a wrapped model): the parameters litellm
            reports as supported for it are known too.
        own: The keywords of the place they were given (for the closest-name search).

    Raises:
        TypeError: naming the keyword and the closest known name. Nothing was sent.
    """
    if not params:
        return
    known = litellm_param_names(str(model) if model is not None else None)
    for name in params:
        if name in _BUILT:
            raise TypeError(
                f"{where} got the keyword argument {name!r}, which the loop builds itself "
                f"for every call: give the model as model= of {_LOOP} or {_AGENT}, the "
                "conversation and tools as their own arguments. Nothing was sent."
            )
        # A helix keyword in the wrong place is check_params' to refuse, with where it goes.
        if name not in known and _known(name) is None:
            raise TypeError(unknown_keyword(name, where, own=own, known=known))


def unknown_keyword(
    name: str, where: str, *, own: Collection[str], known: Collection[str] | None = None
) -> str:
    """The message of a refused keyword: what was given, and the closest name among the run
    options, ``own`` (the keywords of ``where``) and litellm's ``known`` parameters (read
    from litellm when not given)."""
    from .._options import OPTION_NAMES

    if known is None:
        known = litellm_param_names(None)
    helix = [*OPTION_NAMES, *own]
    if name == "extra_body":  # litellm's name for what provider_options is here
        return (
            f"{where} got an unexpected keyword argument 'extra_body': did you mean "
            f"`provider_options`? ({_WHY}). Nothing was sent."
        )
    ours = difflib.get_close_matches(name, helix, n=1, cutoff=0.6)
    theirs = difflib.get_close_matches(name, [k for k in known if k[:1] != "_"], n=1, cutoff=0.6)
    best = max(
        [*ours, *theirs],
        key=lambda c: difflib.SequenceMatcher(None, name, c).ratio(),
        default=None,
    )
    hint = f": did you mean `{best}`?" if best is not None else ""
    return f"{where} got an unexpected keyword argument {name!r}{hint} ({_WHY}). Nothing was sent."


@functools.lru_cache(maxsize=256)
def litellm_param_names(model: str | None) -> frozenset[str]:
    """The parameter names litellm takes for a call to ``model`` (read from litellm; the
    names the loop builds itself are not among them). Loads litellm."""
    from ._litellm import litellm_module

    lx = litellm_module()
    from litellm.constants import OPENAI_CHAT_COMPLETION_PARAMS
    from litellm.types.utils import all_litellm_params

    names = {*OPENAI_CHAT_COMPLETION_PARAMS, *all_litellm_params, *_credentials()}
    for fn in (lx.completion, _get_litellm_params()):
        signature = inspect.signature(fn).parameters.values() if fn is not None else ()
        names |= {p.name for p in signature if p.kind is not inspect.Parameter.VAR_KEYWORD}
    names |= _supported(lx, model)
    return frozenset(names - _BUILT - {"self"})


def _get_litellm_params() -> Callable[..., Any] | None:
    """litellm's ``get_litellm_params``: its keywords are the call parameters litellm takes
    for itself (``drop_params``, ...)."""
    try:
        from litellm.litellm_core_utils.get_litellm_params import get_litellm_params
    except ImportError:  # moved in another litellm version: its other lists still apply
        return None
    return get_litellm_params


def _credentials() -> set[str]:
    """The provider credentials litellm lists (``aws_region_name``, ``vertex_project``, ...)."""
    names: set[str] = set()
    try:
        from litellm.litellm_core_utils import (
            get_litellm_params as params,
            routing_common_utils as routing,
        )
    except ImportError:  # moved in another litellm version: its other lists still apply
        return names
    names |= set(getattr(params, "AWS_CREDENTIAL_KWARGS_KEYS", ()))
    names |= set(getattr(routing, "PROVIDER_SCOPED_CREDENTIAL_PARAMS", {}))
    for key in ("OPENAI_WIF_KWARGS_KEYS", "ANTHROPIC_WIF_KWARGS_KEYS"):
        names |= set(getattr(params, key, ()))
    return names


def _supported(lx: Any, model: str | None) -> set[str]:
    """What litellm reports as supported for ``model`` on its provider (none for a name it
    cannot place: a Router's model group)."""
    if model is None:
        return set()
    try:
        _, provider, _, _ = lx.get_llm_provider(model=model)
        supported = lx.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # litellm cannot place the model: its generic lists still apply
        return set()
    return set(supported or ())
