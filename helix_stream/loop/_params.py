"""The run's check of its litellm params: a run option given as a litellm param is refused
with where it belongs, then :func:`helix_stream.models._params.check_params` checks the rest.

The run options are declared in ``helix_stream/_options.py``, above the model layer; so their
names are checked here, where a run's params enter (``stream_text``, an ``Agent``'s
``settings``), and the model layer checks what it knows itself at every call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._options import OPTION_NAMES
from ..errors import InvalidRequestError
from ..models._params import AGENT, LOOP, check_params as check_model_params

__all__ = ["check_params", "check_run_options"]

_RUN = f"{LOOP}, {AGENT} or Executor.run()"

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
