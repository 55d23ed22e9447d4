"""What the loop does after a step (go on, force the finish tool next, or stop) and its end.

This module owns :func:`next_move` and :func:`run_finish` (the ``finish`` chunk, with the
run's structured answer, and what ``on_finish`` receives). :func:`next_move`: the finish
tool's output ends the run; a forced step or one that waits ends it too; a step without tool
calls ends it, unless a structured answer must still come through the finish tool (then the
next step is forced to call it); else the stop conditions decide, a run with a finish tool
being forced to call it rather than stop.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..chunks import Finish, FinishReason, Usage
from ..models._output import OutputSpec
from ..steps import StepResult, should_stop
from ._answer import finish_required, structured_output
from ._config import LoopConfig
from ._result import GenerateTextResult

__all__ = ["FORCE", "GO_ON", "STOP", "next_move", "run_finish"]

GO_ON, FORCE, STOP = "go on", "force", "stop"


async def next_move(
    cfg: LoopConfig,
    output_spec: OutputSpec | None,
    step: StepResult,
    steps: Sequence[StepResult],
    *,
    forced: bool,
    output: Any,
) -> tuple[str, Any]:
    """Go on, force the finish tool next, or stop; with the run's output from now on (the
    finish tool's, once it answered; else ``output`` as it was)."""
    finish_tool = cfg.finish_tool
    if finish_tool is not None:
        for result in step.tool_results:
            if result.tool_name == finish_tool and result.status == "output":
                return STOP, result.output
    if forced or step.pending:
        return STOP, output
    if not step.tool_calls:
        # A structured answer asked for through the finish tool must come through it.
        return (FORCE if finish_required(output_spec, cfg) else STOP), output
    with cfg.env.calls.scope():  # stop conditions are user code too
        stop = await should_stop(cfg.stop_when, steps)
    if stop:
        return (STOP if finish_tool is None else FORCE), output
    return GO_ON, output


def run_finish(
    cfg: LoopConfig,
    output_spec: OutputSpec | None,
    steps: Sequence[StepResult],
    output: Any,
    usage: Usage,
) -> tuple[Finish, GenerateTextResult[Any]]:
    """The run's ``finish`` chunk, its output the run's answer (the structured one when one
    was asked for), and what ``on_finish`` receives (the same as ``generate_text`` returns)."""
    reason: FinishReason = steps[-1].finish_reason if steps else "stop"
    output = structured_output(output_spec, steps, output, cfg)
    finish = Finish(finish_reason=reason, usage=usage, output=output)
    return finish, GenerateTextResult(
        text=steps[-1].text if steps else "",
        steps=list(steps),
        usage=usage,
        finish_reason=finish.finish_reason,
        response_messages=[m for s in steps for m in s.response_messages],
        output=output,
    )
