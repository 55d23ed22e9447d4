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
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from ..errors import InvalidRequestError

__all__ = ["AGENT", "BUILT", "HELIX_KEYWORDS", "LOOP", "check_params"]

LOOP = "stream_text()/generate_text()"
AGENT = "Agent(...)"

# Keywords of the package (not litellm's) that are not run options, and where each belongs.
# A name that belongs to the place where it was given never reaches this table: that function
# consumed it as an option.
HELIX_KEYWORDS: dict[str, tuple[str, str]] = {
    # name: (what it is, where it belongs)
    "output_schema": (
        "the structured output of an Agent",
        f"{AGENT}; stream_text()/generate_text() take output=",
    ),
    "output": ("the structured output of a call", f"{LOOP}; an Agent takes output_schema="),
    "max_steps": (
        "an Agent's step limit",
        f"{AGENT}; stream_text()/generate_text() stop with stop_when=hs.step_count_is(n)",
    ),
    "step_context": ("the step_context hook", AGENT),
    "step_context_limits": ("the step_context hook's limits", AGENT),
    "hooks": ("define_hook subscribers", AGENT),
    "memory": ("memory recall", AGENT),
    "client_tool_timeout": ("the client tool deadline", AGENT),
    "sandbox": ("an Agent's sandbox provider", AGENT),
    "skills": ("an Agent's skills", AGENT),
    "sandbox_on_session": ("the sandbox preparation", AGENT),
    "settings": ("an Agent's litellm params", f"{AGENT}; here, pass them as keywords"),
    "prompt": ("the user prompt", LOOP),
    "system": ("the system prompt", f"{LOOP} or {AGENT}"),
}

# Params the loop builds itself (messages, tools) or that litellm consumes and that may hold
# objects (a pydantic class as response_format is litellm's documented form).
BUILT = frozenset({"model", "messages", "tools", "stream", "stream_options"})


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
        if name in BUILT or is_litellm_param(name):
            continue
        _check_json(name, value, where)


def _check_name(name: str, value: Any, where: str) -> None:
    known = HELIX_KEYWORDS.get(name)
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
            f"max_retries= to {LOOP} or {AGENT} instead (0: no retries). Nothing was sent."
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
