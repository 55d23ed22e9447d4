"""The chunk vocabulary: one discriminated union that the loop emits and every consumer reads.

Chunks are cheap slotted dataclasses, not validated per chunk. Each class has a ``type``
class attribute (the discriminator; the AI SDK name where one exists). Field names are
snake_case; :mod:`helix_stream.transformers` maps them to the AI SDK's camelCase wire names
and drops the internal ones (``context-row``, ``context_skipped``).
"""

from __future__ import annotations

from .._public_home import claim_classes
from .._step_parts import DataChunk, FinishReason, SourceUrl, Usage
from ._run import (
    Abort,
    ContextRowChunk,
    ContextSkipped,
    ErrorChunk,
    Finish,
    FinishStep,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    ResetStep,
    Start,
    StartStep,
    SteeringMessage,
    TextDelta,
    TextEnd,
    TextStart,
)
from ._tools import (
    ToolApprovalRequest,
    ToolAuthorizationRequest,
    ToolCancelled,
    ToolInputAvailable,
    ToolInputDelta,
    ToolInputStart,
    ToolNotExecuted,
    ToolOutputAvailable,
    ToolOutputDenied,
    ToolOutputError,
    ToolOutputPreliminary,
    ToolResultChunk,
    ToolSettled,
    cancelled_text,
    not_executed_output,
)

__all__ = [
    "Abort",
    "Chunk",
    "ContextRowChunk",
    "ContextSkipped",
    "DataChunk",
    "ErrorChunk",
    "Finish",
    "FinishReason",
    "FinishStep",
    "ReasoningDelta",
    "ReasoningEnd",
    "ReasoningStart",
    "ResetStep",
    "SourceUrl",
    "Start",
    "StartStep",
    "SteeringMessage",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolApprovalRequest",
    "ToolAuthorizationRequest",
    "ToolCancelled",
    "ToolInputAvailable",
    "ToolInputDelta",
    "ToolInputStart",
    "ToolNotExecuted",
    "ToolOutputAvailable",
    "ToolOutputDenied",
    "ToolOutputError",
    "ToolOutputPreliminary",
    "ToolResultChunk",
    "ToolSettled",
    "Usage",
    "cancelled_text",
    "not_executed_output",
]


Chunk = (
    Start
    | StartStep
    | TextStart
    | TextDelta
    | TextEnd
    | ReasoningStart
    | ReasoningDelta
    | ReasoningEnd
    | ToolInputStart
    | ToolInputDelta
    | ToolInputAvailable
    | ToolOutputAvailable
    | ToolOutputPreliminary
    | ToolOutputError
    | ToolNotExecuted
    | ToolApprovalRequest
    | ToolAuthorizationRequest
    | ToolOutputDenied
    | ToolCancelled
    | ToolSettled
    | SourceUrl
    | ContextRowChunk
    | SteeringMessage
    | ContextSkipped
    | FinishStep
    | ResetStep
    | Finish
    | ErrorChunk
    | Abort
    | DataChunk
)

claim_classes(globals())  # their module is this package, not the private one (_public_home.py)
