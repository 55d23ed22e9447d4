"""A tool that raises with its secret in the message: the secret reaches neither the model,
nor the stored log, nor telemetry (checked on the bytes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import helix_stream as hs
from tests.loopback import LoopbackServer, text, tool_calls

TOOL_KEY = "sk-crm-SECRET-4f1c2b"
MIDDLEWARE_KEY = "sk-provider-SECRET-77aa"


class CrmContext(BaseModel):
    api_key: str


class Lookup(BaseModel):
    customer: str


class AddKey(hs.ModelMiddleware):
    """Adds the provider key on the way out, as a credentials middleware does."""

    async def transform_params(self, params: dict[str, Any], *, stream: bool) -> dict[str, Any]:
        return {**params, "api_key": MIDDLEWARE_KEY}


async def test_a_raising_tools_secrets_are_redacted_everywhere_they_could_go(
    loopback: LoopbackServer, tmp_path: Path
) -> None:
    @hs.tool(context_schema=CrmContext)
    def crm(input: Lookup, ctx: hs.ToolContext) -> str:
        """Look a customer up."""
        raise RuntimeError(
            f"401 from CRM for api_key={ctx.context.api_key} (provider key {MIDDLEWARE_KEY})"
        )

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = hs.SQLiteStore(tmp_path / "secrets.db")
    executor = hs.Executor(store=store)
    agent = hs.Agent(
        name="crm",
        model=hs.wrap_model("openai/loopback", [AddKey()]),
        tools=[crm],
        settings={"api_base": loopback.api_base},
        telemetry=hs.TelemetrySettings(tracer_provider=provider, record_outputs=True),
    )
    loopback.script(tool_calls(("crm", {"customer": "ada"})), text("The CRM failed."))
    result = executor.run(agent, "s", "Look up ada", tools_context={"crm": {"api_key": TOOL_KEY}})
    assert await result.text() == "The CRM failed."
    tool_message = next(m for m in result.response_messages if m["role"] == "tool")
    assert "[REDACTED]" in tool_message["content"] and "RuntimeError" in tool_message["content"]
    # The model's second request carries the tool message: without either secret.
    second = loopback.requests[1]
    assert TOOL_KEY.encode() not in second and MIDDLEWARE_KEY.encode() not in second
    assert b"[REDACTED]" in second
    await store.close()
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert TOOL_KEY.encode() not in stored and MIDDLEWARE_KEY.encode() not in stored
    spans = "\n".join(str(s.to_json()) for s in exporter.get_finished_spans())
    assert TOOL_KEY not in spans and MIDDLEWARE_KEY not in spans
