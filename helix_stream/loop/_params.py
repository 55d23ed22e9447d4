"""The run's check of its litellm params: a run option given as a litellm param is refused
with where it belongs, then :func:`helix_stream.models._params.check_params` checks the rest.

The run options are declared in ``helix_stream/loop/_options.py``, above the model layer; so their
names are checked here, where a run's params enter (``stream_text``, an ``Agent``'s
``settings``), and the model layer checks what it knows itself at every call.

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
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..errors import InvalidRequestError
from ..models._params import AGENT, BUILT, HELIX_KEYWORDS, LOOP, check_params as check_model_params
from ._options import OPTION_NAMES

__all__ = [
    "check_known",
    "check_params",
    "check_run_options",
    "litellm_param_names",
    "unknown_keyword",
]

_RUN = f"{LOOP}, {AGENT} or Executor.run()"

# What each run option is, for the message (an option without a line here is "a run option");
# where it belongs is the same for all of them (helix_stream/loop/_options.py).
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


def check_params(
    params: Mapping[str, Any],
    *,
    where: str = "stream_text",
    is_litellm_param: Callable[[str], bool] | None = None,
) -> None:
    """Raise if a run's litellm param is a run option or cannot be sent; ``None`` if all can.

    Args:
        params: The litellm params: for ``stream_text``, the keywords left after its own
            options were taken; for an Agent, its ``settings``.
        where: Where the params came from, for the message.
        is_litellm_param: As for :func:`helix_stream.models._params.check_params`.

    Raises:
        InvalidRequestError: naming the argument, and for a run option, where it goes.
    """
    check_run_options(params, where=where)
    check_model_params(params, where=where, is_litellm_param=is_litellm_param)


def _known(name: str) -> tuple[str, str] | None:
    """What a package keyword is and where it belongs; ``None`` for any other name."""
    if name in OPTION_NAMES:
        return _RUN_OPTIONS.get(name, "a run option"), f"{_RUN} as {name}="
    return HELIX_KEYWORDS.get(name)


def check_run_options(params: Mapping[str, Any], *, where: str) -> None:
    """Raise if one of ``params`` is a run option (a step's request, after ``prepare_step``'s
    overrides, is checked again before each model call).

    Raises:
        InvalidRequestError: naming the option and where it belongs.
    """
    for name in params:
        if name in OPTION_NAMES:
            raise InvalidRequestError(
                f"{name}= ({_RUN_OPTIONS.get(name, 'a run option')}) is not an argument of "
                f"{where}: it belongs to {_RUN} as {name}=. Nothing was sent."
            )


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
        if name in BUILT:
            raise TypeError(
                f"{where} got the keyword argument {name!r}, which the loop builds itself "
                f"for every call: give the model as model= of {LOOP} or {AGENT}, the "
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
    from ..models._litellm import litellm_module

    lx = litellm_module()
    from litellm.constants import OPENAI_CHAT_COMPLETION_PARAMS
    from litellm.types.utils import all_litellm_params

    names = {*OPENAI_CHAT_COMPLETION_PARAMS, *all_litellm_params, *_credentials()}
    for fn in (lx.completion, _get_litellm_params()):
        signature = inspect.signature(fn).parameters.values() if fn is not None else ()
        names |= {p.name for p in signature if p.kind is not inspect.Parameter.VAR_KEYWORD}
    names |= _supported(lx, model)
    return frozenset(names - BUILT - {"self"})


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
