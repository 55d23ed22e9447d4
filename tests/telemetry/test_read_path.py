"""Which reader read a model call's stream is decided per call and shown on the step span
(``helix.read_path``); litellm's import is in no span; a script is never warned about it
and keeps litellm's global settings (README, "Performance")."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
from litellm.integrations.custom_logger import CustomLogger
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import helix_stream as hs
from tests.loopback import LoopbackServer, text


class Counting(CustomLogger):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    async def async_log_success_event(self, *args: Any, **kwargs: Any) -> None:
        self.seen += 1


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    exporter.settings = hs.TelemetrySettings(tracer_provider=provider)  # type: ignore[attr-defined]
    yield exporter
    provider.shutdown()


async def run_path(
    loopback: LoopbackServer, exporter: InMemorySpanExporter, **kw: Any
) -> tuple[Any, Any]:
    """One run: the read path on the step span and on the step's figures."""
    exporter.clear()
    loopback.script(text("hello"))
    settings = exporter.settings  # type: ignore[attr-defined]
    result = hs.stream_text(**loopback.llm(), prompt="x", telemetry=settings, **kw)
    assert await result.text() == "hello"
    (step,) = await result.steps()
    (chat,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    model = step.performance.model if step.performance else None
    return (chat.attributes or {}).get("helix.read_path"), model.read_path if model else None


async def fed(handler: Counting, times: int) -> bool:
    """Whether litellm fed ``handler`` ``times`` answers (it logs in a task of its own)."""
    for _ in range(100):
        if handler.seen >= times:
            break
        await asyncio.sleep(0.02)
    return handler.seen == times


async def test_a_callback_registered_then_removed_leaves_the_next_run_direct(
    warm_loopback: LoopbackServer, exporter: InMemorySpanExporter
) -> None:
    assert await run_path(warm_loopback, exporter) == ("direct", "direct")
    handler = Counting()
    litellm.callbacks.append(handler)
    try:
        assert await run_path(warm_loopback, exporter) == ("litellm", "litellm")
        assert await fed(handler, 1)  # litellm's wrapper fed the callback
    finally:
        litellm.logging_callback_manager.remove_callback_from_all_lists(handler)
    assert await run_path(warm_loopback, exporter) == ("direct", "direct")
    assert await fed(handler, 1)


async def test_a_callback_litellm_still_calls_keeps_its_runs_on_litellms_path(
    warm_loopback: LoopbackServer, exporter: InMemorySpanExporter
) -> None:
    # litellm copies a handler of litellm.callbacks into its success and failure lists on
    # the first call; taking it out of litellm.callbacks alone leaves it there, and litellm
    # goes on calling it: helix must not starve it.
    handler = Counting()
    litellm.callbacks.append(handler)
    try:
        await run_path(warm_loopback, exporter)
        litellm.callbacks.remove(handler)
        assert await run_path(warm_loopback, exporter) == ("litellm", "litellm")
        assert await fed(handler, 2)
    finally:
        litellm.logging_callback_manager.remove_callback_from_all_lists(handler)
    assert await run_path(warm_loopback, exporter) == ("direct", "direct")


async def test_model_middleware_reads_through_litellm_and_says_so(
    warm_loopback: LoopbackServer, exporter: InMemorySpanExporter
) -> None:
    middleware = [hs.default_settings(temperature=0)]
    assert await run_path(warm_loopback, exporter, middleware=middleware) == (
        "litellm",
        "litellm",
    )


def run_script(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )


SCRIPT = """
import asyncio, logging, sys
logging.basicConfig(level=logging.WARNING)
{before}
import helix_stream as hs
from opentelemetry.sdk.trace import TracerProvider, SpanProcessor

class Watch(SpanProcessor):
    def on_start(self, span, parent_context=None):
        print("span", span.name, "litellm loaded:", "litellm" in sys.modules)

provider = TracerProvider()
provider.add_span_processor(Watch())
{setup}
out = asyncio.run(hs.generate_text(model="helix/demo", prompt="Hello!",
                                   telemetry=hs.TelemetrySettings(tracer_provider=provider)))
assert out.text
import litellm
from litellm.llms.custom_httpx import http_handler
print("settings", litellm.suppress_debug_info, http_handler.AIOHTTP_CONNECTOR_LIMIT_PER_HOST)
"""


@pytest.mark.parametrize(
    "before", [pytest.param("", id="helix imports it"), pytest.param("import litellm", id="own")]
)
def test_a_script_is_not_warned_and_keeps_litellms_settings(before: str) -> None:
    out = run_script(SCRIPT.format(before=before, setup=""))
    assert "not loaded at startup" not in out.stderr, out.stderr
    spans = [line for line in out.stdout.splitlines() if line.startswith("span")]
    assert spans and all(line.endswith("litellm loaded: True") for line in spans), out.stdout
    assert "settings False 500" in out.stdout  # litellm's own defaults


def test_a_server_serving_without_loading_at_startup_is_warned_and_configured() -> None:
    setup = (
        "from helix_stream.server import routes\n"
        "routes(hs.Executor(), hs.Agent(name='a', model='helix/demo'))\n"
    )
    out = run_script(SCRIPT.format(before="", setup=setup))
    assert "litellm was not loaded at startup" in out.stderr
    assert "settings True 4096" in out.stdout
