"""Every example runs: each one's ``main(["--once"])`` (offline, the demo model) does its job."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _once(name: str, capsys: pytest.CaptureFixture[str]) -> str:
    module = _load(name)
    assert module.__doc__ and "--once" in module.__doc__  # says how to run it
    # main() runs its own event loop (asyncio.run), so it gets a thread of its own.
    assert await asyncio.to_thread(module.main, ["--once"]) == 0
    return capsys.readouterr().out


def test_every_example_is_tested() -> None:
    tested = {
        "serve_litellm_stream",
        "fastapi_app",
        "tools_context",
        "steering",
        "tool_auth",
        "mcp_tools",
        "sandbox_skills",
        "testing_an_agent",
    }
    assert {p.stem for p in EXAMPLES.glob("*.py")} == tested


async def test_testing_an_agent(capsys: pytest.CaptureFixture[str]) -> None:
    out = (await _once("testing_an_agent", capsys)).splitlines()
    # litellm prints its help banner after the failed call (a script keeps litellm's settings).
    lines = [line for line in out if line.startswith(("answer", "after", "replay", "all"))]
    assert lines[0] == "answer: It is sunny in Paris, 21 °C."
    assert lines[1] == "after a 429: 2 requests"
    assert lines[2].startswith("replay: turn 0, step 0: tool_result differs")
    assert lines[-1] == "all checks passed"


async def test_serve_litellm_stream(capsys: pytest.CaptureFixture[str]) -> None:
    out = await _once("serve_litellm_stream", capsys)
    assert out.startswith('data: {"type":"start"')
    assert 'data: {"type":"text-delta","id":"text-0","delta":"Hello!"}' in out
    assert out.endswith('data: {"type":"finish","finishReason":"stop"}\n\ndata: [DONE]\n\n')


async def test_fastapi_app(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("fastapi", reason="the FastAPI example needs fastapi (pip install fastapi)")
    lines = (await _once("fastapi_app", capsys)).splitlines()
    assert lines[0] == "health: {'status': 'ok'}"
    # The chat routes are in the OpenAPI schema (/docs), beside the app's own.
    assert lines[1] == (
        "documented: /api/auth/callback /api/chat /api/chat/{id}/messages /api/chat/{id}/stop "
        "/api/chat/{id}/stream /context /health"
    )
    assert lines[2].startswith("chat: 200 start start-step tool-input-start")
    assert lines[3:] == [
        'answer: Done: get_weather returned {"city": "Paris", "forecast": "sunny", "temp_c": 21}.',
        "no token: 401 unauthenticated",
        "bob reads alice's chat: 403 forbidden",
    ]


async def test_tools_context(capsys: pytest.CaptureFixture[str]) -> None:
    assert (await _once("tools_context", capsys)).splitlines() == [
        'alice: lookup_order -> {"order_id": 42, "status": "shipped", "warehouse": "eu-west"}',
        'bob: lookup_order -> {"order_id": 42, "status": "shipped", "warehouse": "us-east"}',
    ]


async def test_steering(capsys: pytest.CaptureFixture[str]) -> None:
    assert (await _once("steering", capsys)).splitlines() == [
        'POST /context -> {"recorded": 1}',
        "answer: Done: research returned three sources agree on Mars. "
        "(Following the instruction: Answer in one sentence.)",
    ]


async def test_tool_auth(capsys: pytest.CaptureFixture[str]) -> None:
    events = '["09:00 stand-up", "14:00 design review"]'
    assert (await _once("tool_auth", capsys)).splitlines() == [
        "turn 1: paused, waiting for a sign-in to 'calendar'",
        "sign-in: authorized",
        f"turn 1 goes on: list_events -> {events}",
        f"another session of ada's: list_events -> {events}",
    ]


async def test_mcp_tools(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip(
        "mcp", reason="the MCP example needs the mcp package: pip install 'helix-stream[mcp]'"
    )
    forecast = '{"city": "Paris", "forecast": "sunny", "temp_c": 21}'
    assert (await _once("mcp_tools", capsys)).splitlines() == [
        "tools: meteo__alerts, meteo__forecast",
        f"meteo__forecast -> {forecast}",
        f"answer: Done: meteo__forecast returned {forecast}.",
    ]


async def test_sandbox_skills(capsys: pytest.CaptureFixture[str]) -> None:
    assert (await _once("sandbox_skills", capsys)).splitlines() == [
        "skill index: - release-check: How to check a release before it ships. "
        "Load it before checking one.",
        'answer: Done: run_check returned {"check": 1, "exit_code": 0, "output": "version 1.4.2"}.',
        'answer: Done: run_check returned {"check": 2, "exit_code": 0, "output": "version 1.4.2"}.',
        "sandboxes made: 1",
    ]


def test_an_example_runs_as_a_script() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "steering.py"), "--once"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "(Following the instruction: Answer in one sentence.)" in proc.stdout
