"""``ResetStep`` (a step redone by ``stream_retries``) in the UI stream: ``reset-step`` for an
``ai@7`` client, whose parts of the step go (the fold, the demo page's fold); the failure for
older clients, which cannot drop parts."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helix_stream.chunks import (
    Finish,
    FinishStep,
    ResetStep,
    Start,
    StartStep,
    TextDelta,
    TextEnd,
    TextStart,
    ToolInputDelta,
    ToolInputStart,
)
from helix_stream.transformers import read_ui_message, to_ui_message_stream

STATIC = Path(__file__).resolve().parents[2] / "helix_stream" / "static" / "ui_stream.js"


def chunks() -> list[Any]:
    return [
        Start(message_id="m1"),
        StartStep(step_number=0),
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="Let me"),
        ToolInputStart(tool_call_id="c1", tool_name="lookup"),
        ToolInputDelta(tool_call_id="c1", delta='{"q":'),
        ResetStep(step_number=0),
        TextStart(id="text-0"),
        TextDelta(id="text-0", delta="The answer."),
        TextEnd(id="text-0"),
        FinishStep(step_number=0, finish_reason="stop"),
        Finish(finish_reason="stop"),
    ]


async def ui(version: int) -> list[dict[str, Any]]:
    async def source() -> Any:
        for chunk in chunks():
            yield chunk

    return [c async for c in to_ui_message_stream(source(), client_version=version)]


async def test_an_ai7_client_drops_the_failed_attempts_parts() -> None:
    out = await ui(7)
    assert {"type": "reset-step"} in out
    message = read_ui_message(out)
    assert message["parts"] == [
        {"type": "step-start"},
        {"type": "text", "text": "The answer.", "state": "done"},
    ]


@pytest.mark.parametrize("version", [5, 6])
async def test_an_older_client_gets_the_failure_not_a_glued_answer(version: int) -> None:
    out = await ui(version)
    kinds = [c["type"] for c in out]
    assert "reset-step" not in kinds
    assert "error" in kinds and out[-1] == {"type": "finish", "finishReason": "error"}
    texts = [c["delta"] for c in out if c["type"] == "text-delta"]
    assert texts == ["Let me"]  # nothing after the reset reaches it


async def test_the_demo_page_folds_reset_step_as_the_client_does() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not found on PATH")
    out = await ui(7)
    script = (
        f"import {{foldChunk}} from {json.dumps(str(STATIC))};"
        "const m = {parts: []}; const on = {start() {}, settle() {}};"
        f"for (const c of {json.dumps(out)}) foldChunk(m, c, on);"
        "console.log(JSON.stringify(m.parts.map(({_id, ...p}) => p)));"
    )
    proc = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        {"type": "step-start"},
        {"type": "text", "text": "The answer.", "state": "done"},
    ]
