"""Step middleware: the ``prepare_step`` chain that runs before every model call of the loop.

Each link receives a :class:`StepInput` and returns ``None`` or a dict of overrides: ``model``,
``system``, ``messages``, ``tool_choice``, ``active_tools``, ``runtime_context``,
``tools_context``, ``prompt_cache``, ``timeout`` (this step's ``step``, ``first_chunk`` and
``chunk`` limits: seconds, the ``step``, or an ``hs.Timeout``) or any litellm param. A list of
links is a chain: each sees the input as the links before it left it (their ``messages``, ``model``,
``runtime_context`` and ``tools_context`` applied); later links win. ``runtime_context`` and
``tools_context`` carry forward to later steps (as in the AI SDK); everything else applies to
that step only.

Model middleware, which wraps the litellm call itself, is :mod:`helix_stream.middleware`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

__all__ = ["STEP_OVERRIDE_KEYS", "PrepareStep", "StepInput", "run_step_chain"]

# Overrides that are not litellm params.
STEP_OVERRIDE_KEYS = frozenset(
    {
        "model",
        "tool_choice",
        "active_tools",
        "system",
        "messages",
        "runtime_context",
        "tools_context",
        "prompt_cache",
        "timeout",
    }
)
# The overrides later links of the chain see applied to their input.
_CARRIED = ("messages", "model", "runtime_context", "tools_context")


@dataclass(frozen=True, slots=True, kw_only=True)
class StepInput:
    """What each step middleware (``prepare_step``) receives before a model call.

    Attributes:
        step_number: 0 for the first model call of the run.
        steps: The finished steps so far (``StepResult`` objects).
        messages: The conversation about to be sent, as OpenAI dicts (the system prompt is
            not among them: it is added when the request is built, see ``system``). In an
            executor session they already include the context rows committed for this call.
        model: The model string (or wrapped model) about to be called.
        runtime_context: The shared runtime context (never sent to the model).
        tools_context: The per-tool contexts, keyed by tool name.
        session_id: The executor session, or ``None`` for a plain ``stream_text`` call.
        forced_completion: This is the last call, which must call the finish tool.

    Example::

        def cheaper_later(step: hs.StepInput) -> dict[str, object] | None:
            if step.step_number >= 2:                    # after two model calls, a smaller model
                return {"model": "openai/gpt-4o-mini", "temperature": 0}
            return None

        result = hs.stream_text(model="openai/gpt-4o", prompt="Plan a trip",
                                prepare_step=cheaper_later)
    """

    step_number: int
    steps: Sequence[Any]
    messages: list[dict[str, Any]]
    model: Any
    runtime_context: Mapping[str, Any]
    tools_context: Mapping[str, Any]
    session_id: str | None = None
    forced_completion: bool = False


class PrepareStep(Protocol):
    """``prepare_step(step)``, sync or async: ``None`` or a dict of overrides.

    Example::

        def no_tools_after_three(step: StepInput) -> dict[str, object] | None:
            return {"active_tools": []} if step.step_number >= 3 else None

        chain: list[PrepareStep] = [no_tools_after_three]
        result = hs.stream_text(model="helix/demo", prompt="Hi", prepare_step=chain)
    """

    def __call__(
        self, step: StepInput, /
    ) -> Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None: ...


async def run_step_chain(
    chain: Sequence[PrepareStep], step: StepInput
) -> tuple[StepInput, dict[str, Any]]:
    """Run the chain; return the input as the last link saw it and the merged overrides.

    Raises:
        TypeError: a link returned something that is neither ``None`` nor a dict.

    Example::

        def colder(step: StepInput) -> dict[str, object] | None:
            return {"temperature": 0}

        step = StepInput(step_number=0, steps=[], messages=[], model="helix/demo",
                         runtime_context={}, tools_context={})
        seen, overrides = await run_step_chain([colder], step)
        assert overrides == {"temperature": 0}
    """
    merged: dict[str, Any] = {}
    for link in chain:
        out = link(step)
        if inspect.isawaitable(out):
            out = await out
        if not out:
            continue
        if not isinstance(out, Mapping):
            raise TypeError(f"prepare_step must return None or a dict, not {type(out).__name__}")
        merged.update(out)
        carried = {key: out[key] for key in _CARRIED if key in out}
        if "messages" in carried:
            carried["messages"] = list(carried["messages"])
        if carried:
            step = replace(step, **carried)
    return step, merged
