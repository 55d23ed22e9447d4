"""A run's figures as span attributes: one definition each (README, "Telemetry").

The figures are the ones ``StepResult.performance`` and the lifecycle events carry, taken as
they are: the time to first chunk is ``ModelCallPerformance.time_to_first_chunk`` (to the first
content-bearing chunk), and ``helix.step_time`` is ``StepPerformance.step_time``. Names follow
the OpenTelemetry GenAI semantic conventions where they define one
(``gen_ai.response.time_to_first_chunk``); ``helix.*`` where they do not.
"""

from __future__ import annotations

from typing import Any

from ._compaction import compaction_attributes
from ._filters import AttributeValue
from ._prompt_cache import prompt_cache_attributes

__all__ = [
    "performance_attributes",
    "step_figures",
    "step_time_attributes",
    "time_to_first_chunk_attributes",
]


def time_to_first_chunk_attributes(elapsed: float) -> dict[str, AttributeValue]:
    """The time to the first content-bearing chunk (s) as span attributes: the GenAI semconv
    ``gen_ai.response.time_to_first_chunk``, and ``helix.time_to_first_chunk`` (the same value,
    kept because the README named it before the convention had a name)."""
    value = round(float(elapsed), 6)
    return {"gen_ai.response.time_to_first_chunk": value, "helix.time_to_first_chunk": value}


def performance_attributes(performance: Any) -> dict[str, AttributeValue]:
    """A step's model-call figures as ``helix.*`` span attributes (seconds, tokens/s)."""
    model = getattr(performance, "model", None)
    if model is None:
        return {}
    figures = {
        "helix.response_time": model.response_time,
        "helix.output_tokens_per_second": model.output_tokens_per_second,
        "helix.effective_total_tokens_per_second": model.effective_total_tokens_per_second,
        "helix.longest_chunk_gap": model.longest_gap,
        "helix.median_chunk_gap": model.median_gap,
    }
    out: dict[str, AttributeValue] = {
        name: round(float(v), 6) for name, v in figures.items() if v is not None
    }
    if model.time_to_first_chunk is not None:
        out.update(time_to_first_chunk_attributes(model.time_to_first_chunk))
    if model.read_path is not None:  # who read the stream: "direct" or "litellm"
        out["helix.read_path"] = model.read_path
    return out


def step_time_attributes(performance: Any) -> dict[str, AttributeValue]:
    """``helix.step_time``: the step's ``StepPerformance.step_time`` (s, its tools included;
    the conventions have no step)."""
    step_time = getattr(performance, "step_time", None)
    return {} if step_time is None else {"helix.step_time": round(float(step_time), 6)}


def step_figures(step: Any) -> dict[str, AttributeValue]:
    """A finished model call's figures on its step span: its performance, its prompt-cache
    ledger (``helix.prompt_cache.*``, ``_prompt_cache.py``) and the compaction that ran before
    it (``helix.compaction.*``, ``_compaction.py``)."""
    return {
        **performance_attributes(getattr(step, "performance", None)),
        **prompt_cache_attributes(getattr(step, "cache", None)),
        **compaction_attributes(getattr(step, "compaction", None)),
    }
