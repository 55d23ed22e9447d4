"""A steered message against the real AI SDK client (docs/guides/serving.md, "Steering"):
``ai@7``'s chunk schema accepts the ``steering-message`` part and its fold keeps it in place;
``ai@5`` and ``ai@6`` clients are never sent it (their schemas would reject it)."""

from __future__ import annotations

from typing import Any

import pytest

import helix_stream as hs
from helix_stream.server import create_app
from helix_stream.testing import ScriptedModel

from ._client import AI_VERSIONS, missing_node_reason, run_client, serve_app

_NO_NODE = missing_node_reason()
pytestmark = pytest.mark.skipif(_NO_NODE is not None, reason=_NO_NODE or "")

STEERED = "I meant Paris, Texas."


def steering_app(version: int) -> Any:
    """A chat app whose turns get a message steered in while they answer (at their first
    model call, too late for it: a turn right after answers it, in the same stream)."""
    executor = hs.Executor()
    sent: set[str] = set()

    async def user_types_meanwhile(step: Any) -> None:
        if step.step_number == 0 and step.session_id not in sent:
            sent.add(step.session_id)
            await executor.steer(step.session_id, STEERED, message_id="u-steer")

    model = ScriptedModel([{"text": "Paris, France: mild."}, {"text": "Paris, Texas: hot."}])
    agent = hs.Agent(name="steered", model=model, prepare_step=user_types_meanwhile)
    return create_app(executor, agent, client_version=version)


@pytest.mark.parametrize("version", AI_VERSIONS)
def test_the_steering_part_reaches_ai7_only(version: int) -> None:
    with serve_app(steering_app(version)) as url:
        body = {
            "id": f"conf-{version}",
            "messages": [
                {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Weather?"}]}
            ],
            "trigger": "submit-message",
        }
        result = run_client(f"{url}/api/chat", body, version=version)
    assert result["error"] is None, result["errors"]
    kinds = [chunk["type"] for chunk in result["chunks"]]
    parts = result["finalMessage"]["parts"]
    texts = [p["text"] for p in parts if p["type"] == "text"]
    assert texts == ["Paris, France: mild.", "Paris, Texas: hot."]
    steering = [p for p in parts if p["type"] == "steering-message"]
    if version >= 7:
        assert steering == [
            {
                "type": "steering-message",
                "id": "u-steer",
                "parts": [{"type": "text", "text": STEERED}],
            }
        ]
        types = [p["type"] for p in parts]
        assert types.index("steering-message") == types.index("text") + 2  # after a step-start
    else:
        assert "steering-message" not in kinds and steering == []
