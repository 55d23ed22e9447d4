"""The step span's attributes of the compaction that ran before its model call.

A compaction's summarizer call (``loop/_compaction.py``) is no step of its own: its figures are
attributes of the span of the step whose call it preceded, apart from the step's own usage;
``_figures.step_figures`` gives them with the step's other figures.
"""

from __future__ import annotations

from typing import Any

from ._filters import AttributeValue

__all__ = ["compaction_attributes"]


def compaction_attributes(compaction: Any) -> dict[str, AttributeValue]:
    """``helix.compaction.*`` of a step's ``StepCompaction`` (none without one)."""
    if compaction is None:
        return {}
    usage = compaction.usage
    return {
        "helix.compaction.model": str(compaction.model),
        "helix.compaction.request_tokens": int(compaction.request_tokens),
        "helix.compaction.input_tokens": int(usage.input_tokens),
        "helix.compaction.cached_input_tokens": int(usage.cached_input_tokens),
        "helix.compaction.cache_creation_input_tokens": int(usage.cache_creation_input_tokens),
        "helix.compaction.output_tokens": int(usage.output_tokens),
        "helix.compaction.failed": compaction.error is not None,
    }
