"""A run's structured answer (``output=``): how it is asked for, when the finish tool must be
forced, and how the answer is read from the last step.

``output_mode="auto"`` decides per run: the provider's JSON schema where litellm reports
support, the finish tool otherwise; ``"tool"`` (an ``Agent``) always uses the finish tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import OutputValidationError
from ..models._litellm import ensure_litellm
from ..models._output import OutputSpec, output_from_value, parse_output
from ..steps import StepResult
from ._config import LoopConfig
from ._request import model_name

__all__ = ["finish_required", "run_output_spec", "structured_output"]


async def run_output_spec(cfg: LoopConfig) -> OutputSpec | None:
    """How this run asks for its structured answer (needs litellm for ``auto``)."""
    if cfg.output is None:
        return None
    if cfg.output_mode == "tool":
        return OutputSpec(schema=cfg.output, mode="tool")
    from ..models._output import output_spec

    await ensure_litellm()  # done already when the run started; a no-op then
    return output_spec(cfg.output, model=model_name(cfg.model)[0], router=cfg.router)


def finish_required(spec: OutputSpec | None, cfg: LoopConfig) -> bool:
    """A step without tool calls must be followed by a forced finish-tool call: a structured
    answer asked for through the finish tool must come through it."""
    return spec is not None and spec.mode == "tool" and cfg.output_mode == "auto"


def structured_output(
    spec: OutputSpec | None, steps: Sequence[StepResult], output: Any, cfg: LoopConfig
) -> Any:
    """The run's structured answer as an instance of its model (``output``: what the finish
    tool returned, if it was called).

    Raises:
        OutputValidationError: the answer is not an instance (with the raw text).
    """
    last = steps[-1] if steps else None
    if spec is None or last is None or last.pending:
        return output
    if spec.mode == "json_schema":
        return parse_output(last.text, spec.schema)
    if output is not None:
        return output_from_value(output, spec.schema)
    if cfg.output_mode == "tool":
        return None  # an agent's turn may end without finishing (it answered in text)
    finish = [c for c in last.tool_calls if c.name == cfg.finish_tool]
    error = next((r.error for r in last.tool_results if r.status == "error"), None)
    raise OutputValidationError(
        finish[-1].arguments if finish else last.text,
        schema_name=spec.schema.__name__,
        errors=error or "the model did not call the finish tool",
    )
